/**
 * The README is the newcomer's first test: its TypeScript snippets pass
 * `deno lint` and `deno check` as written (with the package's import
 * specifiers mapped to this checkout), and nothing in it or in `docs/` links
 * outside the repository.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

function snippets(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

Deno.test("every TypeScript snippet in the README is lint-clean and type-checks", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const found = snippets(readme);
  assert.ok(found.length >= 2);
  const dir = await Deno.makeTempDir({ dir: ROOT, prefix: ".readme_" });
  try {
    for (const [i, code] of found.entries()) {
      const file = `${dir}/snippet_${i}.ts`;
      await Deno.writeTextFile(
        file,
        code
          .replaceAll('"@org/mcpkit/mcp"', '"../mcp/mod.ts"')
          .replaceAll('"@org/mcpkit/gateway"', '"../gateway/mod.ts"'),
      );
      for (const command of [["lint", file], ["check", "-q", file]]) {
        const output = await new Deno.Command(Deno.execPath(), {
          args: command,
          cwd: ROOT,
          env: { NO_COLOR: "1" },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(
          output.code,
          0,
          `README snippet ${i}, deno ${command[0]}:\n${code}\n${
            new TextDecoder().decode(output.stderr)
          }${new TextDecoder().decode(output.stdout)}`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the README and docs/ never link outside the repository", async () => {
  const files = ["README.md"];
  for await (const entry of Deno.readDir(`${ROOT}docs`)) {
    if (entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  for (const file of files) {
    const text = await Deno.readTextFile(`${ROOT}${file}`);
    assert.doesNotMatch(text, /\.\.\/shared/, file);
  }
});
