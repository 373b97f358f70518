/**
 * The runner's memory is bounded whatever the environment or the model
 * sends: `deno task eval` runs as a real subprocess and its peak resident
 * memory (VmHWM in /proc/<pid>/status) stays under 300 MB with a tool that
 * answers 50 MB (over stdio and over HTTP), an HTTP environment whose answer
 * never ends, and a model turn of 8,000 tool calls.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { EvalResult } from "../eval/mod.ts";
import { ROOT } from "./_eval_cli.ts";
import { startServerProcess } from "./_example_process.ts";
import { startScriptedModel } from "./fixtures/eval_scripted_model.ts";

const FLOOD_ENV = `${ROOT}tests/fixtures/eval_flood_env.ts`;
const LIMIT_MIB = 300;

interface MeasuredRun {
  code: number;
  stdout: string;
  stderr: string;
  /** The runner's peak resident memory, MiB. */
  peakMiB: number;
}

/** The high-water mark of a process's resident memory, MiB, if it is alive. */
function peakOf(pid: number): number | undefined {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    return kib === undefined ? undefined : Number(kib) / 1024;
  } catch {
    return undefined;
  }
}

/** `deno task eval …` as a subprocess, its peak memory read as it runs. */
async function measuredEval(args: string[], dir: string): Promise<MeasuredRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, ...args],
    cwd: dir,
    env: { NO_COLOR: "1", GATEWAY_URL: "", GATEWAY_KEY: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(180_000),
  }).spawn();
  let peakMiB = 0;
  // VmHWM only grows: its last reading before the exit is the peak.
  const timer = setInterval(() => {
    peakMiB = Math.max(peakMiB, peakOf(child.pid) ?? 0);
  }, 20);
  const output = await child.output();
  clearInterval(timer);
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
    peakMiB,
  };
}

async function onlyResult(file: string): Promise<EvalResult> {
  const lines = (await Deno.readTextFile(file)).trim().split("\n");
  assert.equal(lines.length, 1);
  return JSON.parse(lines[0]);
}

/** The text of every tool result the run's trajectory kept. */
function toolTexts(result: EvalResult): string[] {
  return (result.trajectory?.steps ?? []).flatMap((step) =>
    step.tool_calls.map((call) => call.result?.text ?? "")
  );
}

Deno.test("a tool answering 50 MB over stdio is cut with a marker, the runner under 300 MB", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-memory-" });
  try {
    const run = await measuredEval(
      [FLOOD_ENV, "--out", `${dir}/r.jsonl`],
      dir,
    );
    console.log(
      `stdio, a 50 MB tool result: peak ${run.peakMiB.toFixed(0)} MiB`,
    );
    assert.equal(run.code, 0, run.stderr);
    const result = await onlyResult(`${dir}/r.jsonl`);
    assert.equal(result.error, undefined);
    const [text] = toolTexts(result);
    assert.match(text, /^y{1000}/);
    assert.match(
      text,
      /\[truncated: the environment's answer to tools\/call was over 25165824 bytes/,
    );
    assert.ok(run.peakMiB > 0 && run.peakMiB < LIMIT_MIB, `${run.peakMiB} MiB`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a tool answering 50 MB over HTTP is cut with a marker, the runner under 300 MB", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-memory-" });
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    FLOOD_ENV,
    "http",
  ]);
  try {
    const run = await measuredEval(
      [`${server.baseUrl}/mcp`, "--out", `${dir}/r.jsonl`],
      dir,
    );
    console.log(
      `http, a 50 MB tool result: peak ${run.peakMiB.toFixed(0)} MiB`,
    );
    assert.equal(run.code, 0, run.stderr);
    const result = await onlyResult(`${dir}/r.jsonl`);
    assert.equal(result.error, undefined);
    assert.match(
      toolTexts(result)[0],
      /\[truncated: the environment's answer to tools\/call was over/,
    );
    assert.ok(run.peakMiB > 0 && run.peakMiB < LIMIT_MIB, `${run.peakMiB} MiB`);
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an HTTP environment whose answer never ends is one line, the runner under 300 MB", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-memory-" });
  const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
  let sent = 0;
  const hostile = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      const json = !request.url.endsWith("/sse");
      const start = json
        ? '{"jsonrpc":"2.0","id":0,"result":{"x":"'
        : 'event: message\ndata: {"jsonrpc":"2.0","id":0,"result":{"x":"';
      let first = true;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            // Bounded for the test's sake: 2 GB would be "endless" to the runner.
            if (sent > 2 * 1024 ** 3) return controller.close();
            sent += chunk.length;
            controller.enqueue(
              first ? new TextEncoder().encode(start) : chunk,
            );
            first = false;
          },
        }),
        {
          headers: {
            "content-type": json ? "application/json" : "text/event-stream",
          },
        },
      );
    },
  );
  try {
    for (const path of ["/mcp", "/sse"]) {
      const url = `http://127.0.0.1:${hostile.addr.port}${path}`;
      const run = await measuredEval([url, "--out", `${dir}/r.jsonl`], dir);
      console.log(
        `http, an endless ${path === "/mcp" ? "JSON body" : "event"}: peak ${
          run.peakMiB.toFixed(0)
        } MiB`,
      );
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
      assert.match(run.stderr, /over 25165824 bytes/);
      assert.ok(
        run.peakMiB > 0 && run.peakMiB < LIMIT_MIB,
        `${run.peakMiB} MiB`,
      );
    }
  } finally {
    await hostile.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a model turn of 8,000 tool calls runs the first 32, answers the rest with an error and counts them, the runner under 300 MB", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-eval-memory-" });
  await using model = startScriptedModel({
    models: [{ id: "scripted", routes: ["chat"] }],
    script: [
      {
        calls: Array.from({ length: 8000 }, (_, i) => ({
          name: "echo",
          args: { text: `call ${i}` },
        })),
      },
      { text: "done" },
    ],
  });
  try {
    const run = await measuredEval([
      FLOOD_ENV,
      "--gateway",
      model.url,
      "--key",
      "k",
      "--model",
      "scripted",
      "--out",
      `${dir}/r.jsonl`,
    ], dir);
    console.log(
      `8,000 tool calls in a turn: peak ${run.peakMiB.toFixed(0)} MiB`,
    );
    assert.equal(run.code, 0, run.stderr);
    const result = await onlyResult(`${dir}/r.jsonl`);
    assert.equal(result.excess_tool_calls, 8000 - 32);
    const texts = toolTexts(result);
    assert.deepEqual(texts.slice(0, 2), ["call 0", "call 1"]);
    assert.match(texts[32], /^Error: not run: at most 32 tool calls per turn/);
    assert.match(run.stdout, /^7968 tool call\(s\) past the cap of a turn/m);
    // The next request answered every call, each in a few bytes.
    const next = JSON.stringify(model.requests[1].body);
    assert.ok(next.length < 3_000_000, `${next.length} bytes`);
    assert.ok(run.peakMiB > 0 && run.peakMiB < LIMIT_MIB, `${run.peakMiB} MiB`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
