/**
 * `deno task doc:lint`: `deno doc --lint` on the entry points, failing on
 * every diagnostic except one Deno gets wrong for npm packages.
 *
 * `MCPServer extends McpServer` (the official SDK, an npm package) makes
 * `deno doc --lint` report `private-type-ref` for each SDK type the public API
 * names (`McpServer`, `CallToolResult`, …). Deno stopped raising it for other
 * packages' types (denoland/deno#27364), but npm packages resolve to `file:`
 * paths in Deno's cache and still trip it; re-exporting the SDK types only
 * moves the diagnostics into the SDK's own declarations. So a
 * `private-type-ref` passes here only when the referenced type is declared in
 * none of this repository's files; a private type of our own still fails.
 *
 * @module
 */

const ENTRY_POINTS = [
  "mod.ts",
  "gateway/mod.ts",
  "gateway/simulator/mod.ts",
  "mcp/mod.ts",
  "eval/mod.ts",
  "tools/mod.ts",
];

const output = await new Deno.Command(Deno.execPath(), {
  args: ["doc", "--lint", ...ENTRY_POINTS],
  env: { NO_COLOR: "1" },
  stdout: "null",
  stderr: "piped",
}).output();
const text = new TextDecoder().decode(output.stderr);

const localTypes = await declaredTypeNames(".");
const diagnostics = text.split(/\n(?=error\[)/).filter((block) =>
  block.startsWith("error[")
);
const kept = diagnostics.filter((block) => {
  const match =
    /^error\[private-type-ref\]: public type '[^']+' references private type '([^']+)'/
      .exec(block);
  return !match || localTypes.has(match[1]);
});

for (const block of kept) console.error(block.trimEnd() + "\n");
const ignored = diagnostics.length - kept.length;
if (kept.length > 0 || (diagnostics.length === 0 && !output.success)) {
  if (diagnostics.length === 0) console.error(text);
  console.error(
    `deno doc --lint: ${kept.length} error(s) (${ignored} npm type reference(s) ignored)`,
  );
  Deno.exit(1);
}
console.log(
  `deno doc --lint: clean (${ignored} npm type reference(s) ignored, see scripts/doc_lint.ts)`,
);

/** Names of the types, interfaces, classes and enums declared in the repo's TypeScript. */
async function declaredTypeNames(root: string): Promise<Set<string>> {
  const names = new Set<string>();
  // Declarations only, at the start of a line: `import { type X }` is not one.
  const declaration =
    /^\s*(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?(?:type\s+([\w$]+)\s*(?:<[^=]*>)?\s*=|(?:interface|class|enum)\s+([\w$]+))/gm;
  for await (const path of walk(root)) {
    const source = await Deno.readTextFile(path);
    for (const match of source.matchAll(declaration)) {
      names.add(match[1] ?? match[2]);
    }
  }
  return names;
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (
      entry.name.startsWith(".") || entry.name === "node_modules" ||
      entry.name === "dist"
    ) continue;
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile && path.endsWith(".ts")) yield path;
  }
}
