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
const GATEWAY_ABOVE: Record<string, string[]> = {
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

// What each eval layer may not import: the layers above it. eval/ reads in
// the order an eval runs: the command line (cli/, beside main.ts) → the report
// and the recording (report/, record/) → running the tasks (run/) → the
// agents and the environments (agents/, environments/), which meet only
// through the shared modules at eval/'s root (tool_host.ts, _bounded_*.ts).
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

// Each tree's entry points, at its root, which may import every layer; the
// other root files are shared by the layers and import none of them.
const ENTRIES: Record<string, string[]> = {
  "eval/": ["eval/main.ts", "eval/mod.ts"],
  "mcp/": ["mcp/mod.ts"],
};
const MAX_ROOT_FILES = 12;

for (
  const [tree, above] of [
    ["the gateway's", GATEWAY_ABOVE],
    ["eval's", EVAL_ABOVE],
    ["mcp/'s", MCP_ABOVE],
  ] as const
) {
  Deno.test(`${tree} data moves one way: no layer imports the ones above it`, async () => {
    deepStrictEqual(await upwardImports(above), []);
  });
}

for (const [folder, entries] of Object.entries(ENTRIES)) {
  Deno.test(`${folder}'s shared root modules import none of its layers`, async () => {
    const upward: string[] = [];
    const layer = new RegExp(`^${folder}[^/]+/`);
    for (const path of await rootSources(folder)) {
      if (entries.includes(path)) continue;
      const source = await Deno.readTextFile(ROOT + path);
      for (const imported of importsOf(path, source)) {
        if (layer.test(imported)) upward.push(`${path} → ${imported}`);
      }
    }
    deepStrictEqual(upward, []);
  });

  Deno.test(`${folder} keeps at most ${MAX_ROOT_FILES} source files at its root, its entry points among them`, async () => {
    const root = await rootSources(folder);
    for (const entry of entries) {
      assert.ok(root.includes(entry), `${entry} is missing`);
    }
    assert.ok(
      root.length <= MAX_ROOT_FILES,
      `${root.length} source files at ${folder}'s root: ${root.join(", ")}`,
    );
  });
}

/** Every import of a layer's files that reaches a layer above it. */
async function upwardImports(
  above: Record<string, string[]>,
): Promise<string[]> {
  const upward: string[] = [];
  for (const [layer, forbidden] of Object.entries(above)) {
    for await (const file of walk(`${ROOT}${layer}`)) {
      const path = file.slice(ROOT.length);
      for (const imported of importsOf(path, await Deno.readTextFile(file))) {
        if (forbidden.some((prefix) => imported.startsWith(prefix))) {
          upward.push(`${path} → ${imported}`);
        }
      }
    }
  }
  return upward;
}

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
