/**
 * Finds import cycles among a folder's modules: every relative `import`,
 * `export … from` and dynamic `import("./…")` (type-only ones too, since they
 * tie two files' contracts together) is an edge, and each strongly connected
 * component of more than one module is a cycle. Test files are left out: a
 * test may import anything.
 *
 * ```sh
 * deno run -R scripts/import_cycles.ts gateway mcp
 * ```
 *
 * Prints each cycle on a line and exits 1 if there is one.
 *
 * @module
 */
import { dirname, join, normalize, relative } from "node:path";

// Static imports and re-exports, side-effect imports, and dynamic `import()`
// of a literal path: a module loaded later still ties the two files together.
const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?[^"'`;]*?\sfrom\s+"(\.{1,2}\/[^"]+)"|(?:^|\n)\s*import\s+"(\.{1,2}\/[^"]+)"|\bimport\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g;

/**
 * The relative modules a source file imports, as paths beside `file`.
 *
 * @param file The importing file's path.
 * @param source Its text.
 * @returns The imported paths, normalised.
 * @example
 * ```ts
 * import { deepStrictEqual as assertEquals } from "node:assert/strict";
 * assertEquals(importsOf("a/b.ts", 'import { x } from "../c.ts";'), ["c.ts"]);
 * ```
 */
export function importsOf(file: string, source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(SPECIFIER)) {
    found.push(
      normalize(join(dirname(file), match[1] ?? match[2] ?? match[3])),
    );
  }
  return found;
}

/**
 * The import cycles under the given folders, each as the modules in it.
 *
 * @param folders Folders to read, relative to the working directory.
 * @returns One array per cycle, sorted; empty when there is none.
 * @example
 * ```ts
 * const cycles = await importCycles(["gateway"]);
 * console.log(cycles.length === 0 ? "no cycle" : cycles);
 * ```
 */
export async function importCycles(folders: string[]): Promise<string[][]> {
  const graph = new Map<string, string[]>();
  for (const folder of folders) {
    for await (const file of walk(folder)) {
      graph.set(file, importsOf(file, await Deno.readTextFile(file)));
    }
  }
  return stronglyConnected(graph).filter((part) => part.length > 1)
    .map((part) => part.sort());
}

async function* walk(folder: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(folder)) {
    const path = join(folder, entry.name);
    if (entry.isDirectory) yield* walk(path);
    else if (/\.ts$/.test(entry.name) && !/_test\.ts$/.test(entry.name)) {
      yield relative(".", path);
    }
  }
}

// Tarjan's algorithm, iterative enough for a few hundred modules.
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const parts: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const part: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        part.push(member);
      } while (member !== node);
      parts.push(part);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return parts;
}

if (import.meta.main) {
  const cycles = await importCycles(
    Deno.args.length ? Deno.args : ["gateway", "mcp"],
  );
  for (const cycle of cycles) console.log(`cycle: ${cycle.join(" ↔ ")}`);
  if (cycles.length) Deno.exit(1);
  console.log("no import cycle");
}
