/**
 * The README is the newcomer's first test: its TypeScript snippets pass
 * `deno lint` and `deno check` as written (with the package's import
 * specifiers mapped to this checkout), and nothing in it or in `docs/` links
 * outside the repository.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

function snippets(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

Deno.test("every TypeScript snippet in the README is lint-clean and type-checks", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const found = snippets(readme);
  assert.ok(found.length >= 2);
  const dir = await Deno.makeTempDir({ dir: ROOT, prefix: ".readme_" });
  try {
    for (const [i, code] of found.entries()) {
      const file = `${dir}/snippet_${i}.ts`;
      await Deno.writeTextFile(
        file,
        code
          .replaceAll('"@org/mcpkit/mcp"', '"../mcp/mod.ts"')
          .replaceAll('"@org/mcpkit/gateway"', '"../gateway/mod.ts"'),
      );
      for (const command of [["lint", file], ["check", "-q", file]]) {
        const output = await new Deno.Command(Deno.execPath(), {
          args: command,
          cwd: ROOT,
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(
          output.code,
          0,
          `README snippet ${i}, deno ${command[0]}:\n${code}\n${
            new TextDecoder().decode(output.stderr)
          }${new TextDecoder().decode(output.stdout)}`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the README and docs/ never link outside the repository", async () => {
  const files = ["README.md"];
  for await (const entry of Deno.readDir(`${ROOT}docs`)) {
    if (entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  for (const file of files) {
    const text = await Deno.readTextFile(`${ROOT}${file}`);
    assert.doesNotMatch(text, /\.\.\/shared/, file);
  }
});

/** The shell walkthrough of "The gateway": the README's block that starts the gateway. */
function walkthrough(markdown: string): string {
  const blocks = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1])
    .filter((block) => block.includes("deno task start &"));
  assert.equal(blocks.length, 1, "one walkthrough block in the README");
  return blocks[0];
}

/**
 * Whether this machine can give the walkthrough a loopback of its own (a
 * user and network namespace), so its fixed ports 9000 and 8080 are free
 * whatever else runs here.
 */
async function canIsolate(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("unshare", {
      args: [
        "--user",
        "--map-root-user",
        "--net",
        "ip",
        "link",
        "set",
        "lo",
        "up",
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

const isolated = await canIsolate();
const curl = await new Deno.Command("curl", {
  args: ["--version"],
  stdout: "null",
})
  .output().then((o) => o.success, () => false);
if (!isolated || !curl) {
  console.warn(
    `readme_test: the walkthrough test is skipped: ${
      !curl
        ? "curl is not installed"
        : "unshare cannot make a user and network namespace (or iproute2 is missing)"
    }`,
  );
}

Deno.test({
  name:
    "the README's gateway walkthrough, run exactly as printed, waits for the server, calls it and shows a refusal",
  ignore: !isolated || !curl,
  async fn() {
    const script = walkthrough(await Deno.readTextFile(`${ROOT}README.md`));
    // It waits by asking, not by sleeping, and every call shows its refusal.
    assert.doesNotMatch(script, /\bsleep\b/);
    for (const call of script.match(/^curl .*\/v1\/.*$/gm) ?? []) {
      assert.match(call, /--fail-with-body/, call);
    }
    // A checkout of its own: the repository's files linked into a temp dir,
    // so `deno task` runs there and the walkthrough's ./data/try.kv is new.
    const dir = await Deno.makeTempDir({ prefix: "mcpkit_readme_" });
    try {
      for await (const entry of Deno.readDir(ROOT)) {
        if ([".git", "data", "dist"].includes(entry.name)) continue;
        await Deno.symlink(`${ROOT}${entry.name}`, `${dir}/${entry.name}`);
      }
      await Deno.writeTextFile(`${dir}/walkthrough.sh`, script);
      // Its own loopback (ports 9000 and 8080 free) and its own process
      // tree: when the script ends, the simulator and gateway it left in
      // the background end with it.
      const output = await new Deno.Command("unshare", {
        args: [
          "--user",
          "--map-root-user",
          "--net",
          "--pid",
          "--fork",
          "--kill-child",
          "bash",
          "-c",
          "ip link set lo up && exec bash walkthrough.sh",
        ],
        cwd: dir,
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(150_000),
      }).output();
      const stdout = new TextDecoder().decode(output.stdout);
      const stderr = new TextDecoder().decode(output.stderr);
      const context = `stdout:\n${stdout}\nstderr:\n${stderr}`;
      const lines = stdout.split("\n");
      assert.ok(lines.includes('{"ok":true}'), context);
      const completion = JSON.parse(
        lines.find((line) => line.includes('"chat.completion"')) ?? "null",
      );
      assert.equal(
        completion?.choices[0].message.content,
        "Echo: Hello",
        context,
      );
      // The refusal is on screen: its reason, and curl naming the status.
      assert.match(stdout, /Model \\"no-such-model\\" does not exist/, context);
      assert.match(stderr, /returned error: 404/, context);
      // The CLI said which KV it opened: the gateway's, already there.
      assert.match(
        stderr,
        /Store: KV \S*data\/try\.kv \(GATEWAY_KV_PATH\)\n/,
        context,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
