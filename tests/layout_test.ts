/**
 * The layout's rules, checked: no import cycle in gateway/, mcp/, eval/ or
 * tools/ (type-only imports count), and the gateway's data moves one way:
 * http → call → upstream / state / observe, never back up.
 */
import { deepStrictEqual } from "node:assert/strict";
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

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) yield* walk(`${path}/`);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
      yield path;
    }
  }
}
