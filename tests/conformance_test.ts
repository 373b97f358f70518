/**
 * Runs the official MCP conformance suite
 * (`npm:@modelcontextprotocol/conformance`, every server scenario, active and
 * pending) against `examples/conformance/main.ts` over Streamable HTTP, both
 * as real subprocesses.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServerProcess } from "./_example_process.ts";

const CONFORMANCE = "npm:@modelcontextprotocol/conformance@0.1.16";
const SERVER = new URL("../examples/conformance/main.ts", import.meta.url)
  .pathname;
const SUITE_TIMEOUT_MS = 120_000;

/**
 * Checks the suite reports as WARNING for reasons written down in
 * docs/decisions.md ("## Conformance"): the pending `server-sse-polling`
 * scenario wants SSE resumability (priming event, `retry`), which the SDK
 * transport only offers with an event store that `mcp/transports.ts` does not
 * configure. Any other warning, and any failure, fails this test.
 */
const KNOWN_WARNINGS = new Set([
  "server-sse-polling/server-sse-priming-event",
  "server-sse-polling/server-sse-retry-field",
]);

interface Check {
  id: string;
  name: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

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

/** Reads `<dir>/server-<scenario>-<timestamp>/checks.json` for each scenario. */
async function readChecks(dir: string): Promise<Map<string, Check[]>> {
  const byScenario = new Map<string, Check[]>();
  for await (const entry of Deno.readDir(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(entry.name)?.[1];
    if (!entry.isDirectory || !scenario) continue;
    const checks = JSON.parse(
      await Deno.readTextFile(`${dir}/${entry.name}/checks.json`),
    ) as Check[];
    byScenario.set(scenario, checks);
  }
  return byScenario;
}

Deno.test({
  name:
    "the conformance server passes every server scenario of the official MCP conformance suite",
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
    const listing = await run(["list", "--server"], results, controller.signal);
    const scenarios = [...listing.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) =>
      m[1]
    );
    assert.ok(
      scenarios.length >= 30,
      `Expected the suite to list at least 30 server scenarios, got ${scenarios.length}`,
    );

    const suite = await run(
      [
        "server",
        "--suite",
        "all",
        "--url",
        `${server.baseUrl}/mcp`,
        "-o",
        results,
      ],
      results,
      controller.signal,
    );
    const summary = [
      ...suite.stdout.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm),
    ];
    assert.deepEqual(
      summary.map((m) => m[1]).sort(),
      [...scenarios].sort(),
      "Every listed scenario appears in the summary",
    );
    const failedScenarios = summary.filter((m) => m[3] !== "0").map((m) =>
      m[1]
    );
    assert.deepEqual(failedScenarios, [], suite.stdout + suite.stderr);
    assert.equal(suite.code, 0, suite.stdout + suite.stderr);

    const checks = await readChecks(results);
    assert.deepEqual([...checks.keys()].sort(), [...scenarios].sort());
    const failures: string[] = [];
    const warnings: string[] = [];
    let passed = 0;
    for (const [scenario, list] of checks) {
      for (const check of list) {
        const id = `${scenario}/${check.id}`;
        if (check.status === "SUCCESS") passed++;
        if (check.status === "FAILURE") {
          failures.push(`${id}: ${check.errorMessage}`);
        }
        if (check.status === "WARNING") warnings.push(id);
      }
    }
    assert.deepEqual(failures, []);
    assert.deepEqual(warnings.sort(), [...KNOWN_WARNINGS].sort());
    const total = /^Total: (\d+) passed, (\d+) failed$/m.exec(suite.stdout);
    assert.ok(total, "The suite prints its total");
    assert.equal(Number(total[1]), passed);
    assert.equal(Number(total[2]), 0);
    console.log(
      `conformance: ${summary.length}/${scenarios.length} scenarios, ${passed} checks passed, 0 failed, known warnings: ${
        [...KNOWN_WARNINGS].join(", ")
      }`,
    );
  } finally {
    clearTimeout(deadline);
    await server.stop();
    await Deno.remove(results, { recursive: true });
  }
});
