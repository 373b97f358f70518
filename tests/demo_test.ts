/**
 * `deno task demo` as a user runs it: start it, copy the printed `curl`
 * line, run it, get a chat completion, open the printed console address and
 * sign in with the printed admin token, stop the demo with SIGTERM.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

async function hasCurl(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("curl", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

const curlMissing = !(await hasCurl());
if (curlMissing) {
  console.warn("demo_test: curl is not installed; the demo test is skipped");
}

/** Resolves as `promise` does, or rejects with `message` after `ms`; leaves no timer behind. */
async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  message: () => string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads lines until one satisfies `wanted`; every line read is kept in `seen`. */
async function waitForLine(
  lines: ReadableStreamDefaultReader<string>,
  seen: string[],
  wanted: (line: string) => boolean,
): Promise<string> {
  for (;;) {
    const { value, done } = await lines.read();
    if (done) {
      throw new Error(`The demo's output ended early:\n${seen.join("\n")}`);
    }
    seen.push(value);
    if (wanted(value)) return value;
  }
}

/** Splits a text stream into lines. */
function lineSplitter(): TransformStream<string, string> {
  let buffer = "";
  return new TransformStream({
    transform(chunk, controller) {
      buffer += chunk;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      for (const part of parts) controller.enqueue(part);
    },
    flush(controller) {
      if (buffer) controller.enqueue(buffer);
    },
  });
}

Deno.test({
  name:
    "deno task demo prints a curl line that returns a chat completion, the console's address with a token that signs in, and stops on SIGTERM",
  ignore: curlMissing,
  async fn() {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["task", "demo"],
      cwd: ROOT,
      env: { PORT: "0", HOST: "127.0.0.1", GATEWAY_KV_PATH: ":memory:" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const lines = child.stdout
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(lineSplitter())
      .getReader();
    const seen: string[] = [];
    let exited = false;
    let passed = false;
    try {
      const curlLine = await withTimeout(
        waitForLine(
          lines,
          seen,
          (line) =>
            line.startsWith("curl ") && line.includes("/v1/chat/completions"),
        ),
        30_000,
        () =>
          `No curl line from the demo within 30 s; it printed:\n${
            seen.join("\n")
          }`,
      );
      // PORT=0: the printed URL carries the port actually bound.
      const url = new URL(/(http:\/\/\S+)\/v1\/chat/.exec(curlLine)![1]);
      assert.notEqual(url.port, "0");
      assert.notEqual(url.port, "");

      const curl = await new Deno.Command("bash", {
        args: ["-c", curlLine],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(10_000),
      }).output();
      const out = new TextDecoder().decode(curl.stdout);
      assert.ok(
        curl.success,
        `curl failed: ${new TextDecoder().decode(curl.stderr)}`,
      );
      const completion = JSON.parse(out);
      assert.equal(completion.object, "chat.completion");
      assert.equal(completion.model, "claude-haiku-4-5");
      assert.equal(completion.choices[0].message.role, "assistant");
      assert.equal(
        completion.choices[0].message.content,
        "Echo: Hello, gateway",
      );
      assert.equal(completion.choices[0].finish_reason, "stop");
      assert.ok(completion.usage.total_tokens > 0);

      // The console, and the admin token it signs in with, are printed.
      const consoleLine = await withTimeout(
        waitForLine(lines, seen, (line) => line.startsWith("Console: ")),
        10_000,
        () => `No console line from the demo:\n${seen.join("\n")}`,
      );
      const [, consoleUrl, token] =
        /^Console: (http:\/\/\S+\/console) +\(sign in with the admin token made for this run: (\S+)\)$/
          .exec(consoleLine) ?? [];
      assert.ok(consoleUrl && token, consoleLine);
      const page = await fetch(consoleUrl);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type") ?? "", /text\/html/);
      await page.body?.cancel();
      const keys = await fetch(`${url.origin}/admin/keys`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(keys.status, 200, "the printed token signs in");
      assert.deepEqual(
        (await keys.json()).data.map((key: { name: string }) => key.name),
        ["demo"],
      );
      const wrong = await fetch(`${url.origin}/admin/keys`, {
        headers: { authorization: "Bearer not-the-demo-token-at-all" },
      });
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();

      child.kill("SIGTERM");
      const status = await withTimeout(
        child.status,
        10_000,
        () => "The demo did not exit within 10 s of SIGTERM",
      );
      exited = true;
      assert.equal(
        status.code,
        0,
        `demo exited with ${JSON.stringify(status)}`,
      );
      // The gateway itself is gone, not only the task runner.
      await assert.rejects(fetch(`${url.origin}/health`));
      passed = true;
    } finally {
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch {
          // Already gone.
        }
        await child.status;
      }
      await lines.cancel();
      const errors = await stderr;
      // The task runner's banner goes to stderr; show it only on failure.
      if (!passed) console.error(errors);
    }
  },
});
