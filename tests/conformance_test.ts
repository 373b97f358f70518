/**
 * Runs the official MCP conformance suite
 * (`npm:@modelcontextprotocol/conformance`) against
 * `examples/conformance/main.ts` over Streamable HTTP, both as real
 * subprocesses, once per protocol revision as that revision froze its
 * requirements: `--requirements 2025-11-25` and `--requirements 2026-07-28`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServerProcess } from "./_example_process.ts";

const CONFORMANCE = "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12";
const SERVER = new URL("../examples/conformance/main.ts", import.meta.url)
  .pathname;
const SUITE_TIMEOUT_MS = 120_000;
const REVISIONS = ["2025-11-25", "2026-07-28"];

/**
 * The scenarios the suite runs but does not score that may fail: the tasks
 * extension (`io.modelcontextprotocol/tasks`), which the SDK v2 does not
 * implement (examples/conformance/README.md). Every pending scenario passes.
 */
const UNSUPPORTED_EXTENSION = /^tasks-/;

/** Runs the CLI from `cwd`, outside the project, so it does not touch deno.lock. */
async function run(
  args: string[],
  cwd: string,
  signal: AbortSignal,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CONFORMANCE, ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
    signal,
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test({
  name:
    "the conformance server passes the official MCP conformance suite for 2025-11-25 and 2026-07-28, exit 0, no expected failures",
  sanitizeResources: true,
  sanitizeOps: true,
}, async () => {
  const controller = new AbortController();
  const deadline = setTimeout(() => controller.abort(), SUITE_TIMEOUT_MS);
  const server = await startServerProcess(Deno.execPath(), [
    "run",
    "-A",
    SERVER,
    "http",
  ]);
  const results = await Deno.makeTempDir({ prefix: "mcpkit-conformance-" });
  try {
    for (const revision of REVISIONS) {
      const suite = await run(
        [
          "server",
          "--url",
          `${server.baseUrl}/mcp`,
          "--requirements",
          revision,
          "-o",
          `${results}/${revision}`,
        ],
        results,
        controller.signal,
      );
      const output = suite.stdout + suite.stderr;
      assert.equal(suite.code, 0, output);
      const [scored, notScored = ""] = output.split(/^Not scored for /m);
      const outcomes = (text: string) =>
        [...text.matchAll(/^\s*([✓✗]) ([^\s:]+)/gm)].map((m) => ({
          passed: m[1] === "✓",
          scenario: m[2],
        }));
      const scoredRuns = outcomes(scored.split("=== SUMMARY ===")[1] ?? "");
      const extra = new Set(outcomes(notScored).map((o) => o.scenario));
      const failing = scoredRuns.filter((o) =>
        !o.passed && !extra.has(o.scenario)
      );
      assert.deepEqual(failing, [], output);
      const unexpected = outcomes(notScored).filter((o) =>
        !o.passed && !UNSUPPORTED_EXTENSION.test(o.scenario)
      );
      assert.deepEqual(unexpected, [], output);
      const total = /^Total: (\d+) passed, (\d+) failed$/m.exec(output);
      assert.ok(total, "The suite prints its total");
      console.log(
        `conformance ${revision}: exit 0, ${
          scoredRuns.length - extra.size
        } scored scenarios pass; not scored: ${
          outcomes(notScored).map((o) =>
            `${o.scenario} ${o.passed ? "passes" : "fails"}`
          ).join(", ") || "none"
        }`,
      );
    }
  } finally {
    clearTimeout(deadline);
    await server.stop();
    await Deno.remove(results, { recursive: true });
  }
});
