/**
 * `deno run --watch`: a reload after an edit does not run the shutdown hook;
 * a SIGTERM from outside still runs it, exactly once. Drives a real watched
 * process and edits its file.
 *
 * @module
 */
import assert from "node:assert/strict";

const MOD = new URL("../mcp/mod.ts", import.meta.url).href;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;

function envSource(marker: string, generation: number): string {
  return `// generation ${generation}
import { MCPServer } from "${MOD}";
const mcp = new MCPServer({ name: "watched" });
mcp.tool({ name: "ping" }, () => "pong");
mcp.shutdown(() => Deno.writeTextFileSync(${
    JSON.stringify(marker)
  }, "shutdown\\n", { append: true }));
await mcp.run({
  transport: "http",
  port: 0,
  onListen: ({ port }) => console.error("listening", ${generation}, port),
});
`;
}

async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function readMarker(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return "";
  }
}

Deno.test("under deno run --watch, a reload skips the shutdown hook and a SIGTERM from outside runs it once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-watch-" });
  const file = `${dir}/env.ts`;
  const marker = `${dir}/shutdowns.txt`;
  await Deno.writeTextFile(file, envSource(marker, 1));
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, "--watch", file],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const drained = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
    }
  })();
  try {
    await waitFor(() => stderr.includes("listening 1"), "the first start")
      .catch((error) => {
        throw new Error(`${error.message}; stderr:\n${stderr}`);
      });
    await Deno.writeTextFile(file, envSource(marker, 2));
    await waitFor(() => stderr.includes("listening 2"), "the reload").catch(
      (error) => {
        throw new Error(`${error.message}; stderr:\n${stderr}`);
      },
    );
    assert.equal(readMarker(marker), "", "a reload runs no shutdown hook");
    assert.match(stderr, /reloading, shutdown hooks skipped/);

    // Past the reload window, a SIGTERM is from outside.
    await new Promise((resolve) => setTimeout(resolve, 3_200));
    child.kill("SIGTERM");
    await waitFor(() => readMarker(marker) !== "", "the shutdown hook");
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(readMarker(marker), "shutdown\n", "exactly once");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await child.status;
    await drained;
    await Deno.remove(dir, { recursive: true });
  }
});
