/**
 * The layout's rules, checked: no import cycle in gateway/, mcp/, eval/ or
 * tools/ (type-only and dynamic imports count), the gateway's data moves one
 * way: http → call → upstream / state / observe, never back up; and so does
 * eval's: cli → report / record → run → agents / environments; and mcp/'s:
 * server → hud → transports, scenarios → primitives.
 */
import assert, { deepStrictEqual } from "node:assert/strict";
import { importCycles, importsOf } from "../scripts/import_cycles.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("no import cycle among the modules of gateway/, mcp/, eval/ and tools/", async () => {
  const before = Deno.cwd();
  Deno.chdir(ROOT);
  try {
    deepStrictEqual(
      await importCycles(["gateway", "mcp", "eval", "tools"]),
      [],
    );
  } finally {
    Deno.chdir(before);
  }
});

// What each gateway layer may not import: the layers above it.
const ABOVE: Record<string, string[]> = {
  "gateway/upstream/": ["gateway/call/", "gateway/http/", "gateway/cli/"],
  "gateway/state/": [
    "gateway/call/",
    "gateway/http/",
    "gateway/cli/",
    "gateway/observe/",
  ],
  "gateway/observe/": ["gateway/call/", "gateway/http/", "gateway/cli/"],
  "gateway/call/": ["gateway/http/", "gateway/cli/"],
};

Deno.test("the gateway's data moves one way: no layer imports the ones above it", async () => {
  const upward: string[] = [];
  for (const [layer, above] of Object.entries(ABOVE)) {
    for await (const file of walk(`${ROOT}${layer}`)) {
      const path = file.slice(ROOT.length);
      for (const imported of importsOf(path, await Deno.readTextFile(file))) {
        if (above.some((prefix) => imported.startsWith(prefix))) {
          upward.push(`${path} → ${imported}`);
        }
      }
    }
  }
  deepStrictEqual(upward, []);
});

// What each eval layer may not import: the layers above it. eval/ reads in
// the order an eval runs: the command line (cli/, beside main.ts) → the report
// and the recording (report/, record/) → running the tasks (run/) → the
// agents and the environments (agents/, environments/), which meet only
// through the shared modules at eval/'s root (tool_host.ts, _bounded_*.ts).
const EVAL_LAYERS = [
  "eval/cli/",
  "eval/report/",
  "eval/record/",
  "eval/run/",
  "eval/agents/",
  "eval/environments/",
];
const EVAL_ABOVE: Record<string, string[]> = {
  "eval/report/": ["eval/cli/", "eval/record/"],
  "eval/record/": ["eval/cli/", "eval/report/"],
  "eval/run/": ["eval/cli/", "eval/report/", "eval/record/"],
  "eval/agents/": [
    "eval/cli/",
    "eval/report/",
    "eval/record/",
    "eval/run/",
    "eval/environments/",
  ],
  "eval/environments/": [
    "eval/cli/",
    "eval/report/",
    "eval/record/",
    "eval/run/",
    "eval/agents/",
  ],
};
// eval/'s entry points, which may import every layer.
const EVAL_ENTRIES = ["eval/main.ts", "eval/mod.ts"];

Deno.test("eval's data moves one way: no layer imports the ones above it", async () => {
  const upward: string[] = [];
  for (const [layer, above] of Object.entries(EVAL_ABOVE)) {
    for await (const file of walk(`${ROOT}${layer}`)) {
      const path = file.slice(ROOT.length);
      for (const imported of importsOf(path, await Deno.readTextFile(file))) {
        if (above.some((prefix) => imported.startsWith(prefix))) {
          upward.push(`${path} → ${imported}`);
        }
      }
    }
  }
  deepStrictEqual(upward, []);
});

Deno.test("eval's shared root modules import none of its layers", async () => {
  const upward: string[] = [];
  for (const path of await rootSources("eval/")) {
    if (EVAL_ENTRIES.includes(path)) continue;
    for (
      const imported of importsOf(path, await Deno.readTextFile(ROOT + path))
    ) {
      if (EVAL_LAYERS.some((prefix) => imported.startsWith(prefix))) {
        upward.push(`${path} → ${imported}`);
      }
    }
  }
  deepStrictEqual(upward, []);
});

Deno.test("eval/ keeps at most 12 source files at its root, its entry points among them", async () => {
  const root = await rootSources("eval/");
  for (const entry of EVAL_ENTRIES) {
    deepStrictEqual(root.includes(entry), true, `${entry} is missing`);
  }
  deepStrictEqual(
    root.length <= 12,
    true,
    `${root.length} source files at eval/'s root: ${root.join(", ")}`,
  );
});

// What each mcp/ layer may not import: the layers above it. server/ (the
// class and its run()) is on top; hud/ serves the class's tasks over HUD's
// control channel with the transports' and scenarios' pieces; transports/ and
// scenarios/ stand side by side and never import each other; primitives/ (the
// tools, resources, prompts and hubs the class registers) is under them all.
// All of mcp/ sits below the eval runner and apart from the gateway.
const MCP_ABOVE: Record<string, string[]> = {
  "mcp/": ["eval/", "gateway/"],
  "mcp/hud/": ["mcp/server/"],
  "mcp/transports/": ["mcp/server/", "mcp/hud/", "mcp/scenarios/"],
  "mcp/scenarios/": ["mcp/server/", "mcp/hud/", "mcp/transports/"],
  "mcp/primitives/": [
    "mcp/server/",
    "mcp/hud/",
    "mcp/transports/",
    "mcp/scenarios/",
  ],
};

// The public entry re-exports every layer; the other root files (the SDK
// glue, the harness token) are shared by all of them and import none.
const MCP_ENTRY = "mcp/mod.ts";
const MCP_MAX_ROOT_FILES = 12;

Deno.test("mcp/'s layers import one way: none imports the ones above it", async () => {
  const upward: string[] = [];
  for (const [layer, above] of Object.entries(MCP_ABOVE)) {
    for await (const file of walk(`${ROOT}${layer}`)) {
      const path = file.slice(ROOT.length);
      for (const imported of importsOf(path, await Deno.readTextFile(file))) {
        if (above.some((prefix) => imported.startsWith(prefix))) {
          upward.push(`${path} → ${imported}`);
        }
      }
    }
  }
  for (const path of await rootSources("mcp/")) {
    if (path === MCP_ENTRY) continue;
    for (
      const imported of importsOf(path, await Deno.readTextFile(ROOT + path))
    ) {
      if (/^mcp\/[^/]+\//.test(imported)) upward.push(`${path} → ${imported}`);
    }
  }
  deepStrictEqual(upward, []);
});

Deno.test(`mcp/ has at most ${MCP_MAX_ROOT_FILES} source files at its root`, async () => {
  const files = await rootSources("mcp/");
  assert.ok(
    files.length <= MCP_MAX_ROOT_FILES,
    `${files.length} source files at mcp/'s root: ${files.join(", ")}`,
  );
});

/** The non-test `.ts` files directly in a folder, as paths from the root. */
async function rootSources(folder: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}${folder}`)) {
    if (
      entry.isFile && entry.name.endsWith(".ts") &&
      !entry.name.endsWith("_test.ts")
    ) {
      found.push(`${folder}${entry.name}`);
    }
  }
  return found.sort();
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) yield* walk(`${path}/`);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
      yield path;
    }
  }
}
