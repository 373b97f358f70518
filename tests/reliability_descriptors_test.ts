/**
 * Running out of file descriptors must not take a server down. A process
 * with a low descriptor limit gets flooded with idle connections until
 * Deno's accept loop fails ("Too many open files"); once the flood lets go,
 * the server answers again, in the same process.
 */
import assert from "node:assert/strict";
import { freePort } from "./_ports.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Starts `args` under `ulimit -n 64`, waits until `ready` answers 200. */
async function start(
  args: string[],
  env: Record<string, string>,
  ready: string,
): Promise<{ process: Deno.ChildProcess; stderr: () => string }> {
  const process = new Deno.Command("bash", {
    args: ["-c", `ulimit -n 64; exec "${Deno.execPath()}" ${args.join(" ")}`],
    cwd: ROOT,
    env: { ...env, NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  (async () => {
    for await (
      const chunk of process.stderr.pipeThrough(new TextDecoderStream())
    ) text += chunk;
  })();
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const response = await fetch(ready);
      await response.body?.cancel();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < deadline, `never answered: ${text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { process, stderr: () => text };
}

/** Opens idle connections until the server stops accepting (or 300), then closes them all. */
async function flood(port: number): Promise<number> {
  const connections: Deno.Conn[] = [];
  for (let i = 0; i < 300; i++) {
    try {
      connections.push(
        await Deno.connect({ hostname: "127.0.0.1", port }),
      );
    } catch {
      break;
    }
  }
  // Let the server's accept loop run into its limit.
  await new Promise((resolve) => setTimeout(resolve, 500));
  for (const connection of connections) connection.close();
  return connections.length;
}

async function answersAgain(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // still recovering
    }
    assert.ok(Date.now() < deadline, `${url} never answered again`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

for (
  const [name, args, readyPath] of [
    ["the gateway", ["run", "-A", "gateway/main.ts"], "/health"],
    [
      "an MCPServer on HTTP",
      ["run", "-A", "examples/text_game/main.ts", "http"],
      "/dev",
    ],
  ] as const
) {
  Deno.test(`${name} keeps serving after running out of file descriptors`, async () => {
    const port = freePort();
    const url = `http://127.0.0.1:${port}${readyPath}`;
    const server = await start([...args], {
      PORT: String(port),
      MCP_PORT: String(port),
      HOST: "127.0.0.1",
      MCP_HOST: "127.0.0.1",
      GATEWAY_KV_PATH: ":memory:",
    }, url);
    try {
      const opened = await flood(port);
      assert.ok(opened > 0);
      await answersAgain(url);
      assert.match(server.stderr(), /Too many open files/);
      assert.match(server.stderr(), /listening again/);
    } finally {
      server.process.kill("SIGTERM");
      const status = await server.process.status;
      assert.equal(status.code, 0, server.stderr());
    }
  });
}
