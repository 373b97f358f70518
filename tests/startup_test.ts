/**
 * Start-up mistakes a newcomer makes are one line on stderr and exit 1: a
 * busy port for `deno task start` and `deno task demo`.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

for (const script of ["gateway/main.ts", "gateway/cli/demo.ts"]) {
  Deno.test(`${script} on a busy port says which port and that PORT= changes it, in one line`, async () => {
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const port = (taken.addr as Deno.NetAddr).port;
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", script],
        cwd: ROOT,
        env: {
          PORT: String(port),
          HOST: "127.0.0.1",
          GATEWAY_KV_PATH: ":memory:",
          NO_COLOR: "1",
        },
        stdout: "null",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr).trim();
      assert.equal(output.code, 1, stderr);
      assert.equal(stderr.split("\n").length, 1, stderr);
      assert.match(stderr, new RegExp(`Port ${port} .*already in use`));
      assert.match(stderr, /PORT=/);
    } finally {
      taken.close();
    }
  });
}

Deno.test("gateway/main.ts names its store and warns in one line about each provider with no key", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "gateway/main.ts"],
    cwd: ROOT,
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      GATEWAY_KV_PATH: ":memory:",
      OPENAI_API_KEYS: "sk-openai-startup-test",
      XAI_API_KEYS: "xai-startup-test",
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    let text = "";
    // Start-up prints its lines at once; read until the last warning.
    while (!/openrouter/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    lines.push(...text.trim().split("\n"));
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0, text);
  } finally {
    clearTimeout(timer);
    await reader.cancel();
  }
  // The store it opened, then the warnings.
  assert.match(
    lines[0],
    /^mcpkit gateway listening on http:\/\/127\.0\.0\.1:\d+ .*:memory:/,
  );
  assert.deepEqual(lines.slice(1), [
    "Warning: no anthropic key configured: calls to anthropic models get 503 until ANTHROPIC_API_KEYS is set",
    "Warning: no gemini key configured: calls to gemini models get 503 until GEMINI_API_KEYS is set",
    "Warning: no openrouter key configured: calls to openrouter models get 503 until OPENROUTER_API_KEYS is set",
  ]);
});
