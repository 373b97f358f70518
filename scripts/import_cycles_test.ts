import { deepStrictEqual } from "node:assert/strict";
import { importCycles, importsOf } from "./import_cycles.ts";

Deno.test("importsOf() counts static, type-only, re-export and side-effect imports", () => {
  const source = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    "import {",
    "  type C,",
    "  c,",
    '} from "./c.ts";',
    'export * from "./d.ts";',
    'export type { E } from "./e.ts";',
    'import "./f.ts";',
    'import { z } from "zod";',
  ].join("\n");
  deepStrictEqual(importsOf("x/y.ts", source), [
    "x/a.ts",
    "b.ts",
    "x/c.ts",
    "x/d.ts",
    "x/e.ts",
    "x/f.ts",
  ]);
});

Deno.test("importsOf() counts dynamic import() of a relative module, not one in a comment", () => {
  const source = [
    "export async function start(kind: string) {",
    '  if (kind === "hud") return (await import("../hud/serve.ts")).start();',
    "  const { start } = await import(",
    '    "./http.ts"',
    "  );",
    '  type Later = typeof import("./later.ts");',
    '  await import("@modelcontextprotocol/client");',
    "  await import(`./${kind}.ts`);",
    "  return start();",
    "}",
    "/**",
    ' * const { x } = await import("./example.ts");',
    " */",
    '// await import("./commented.ts");',
  ].join("\n");
  deepStrictEqual(importsOf("m/server/run.ts", source), [
    "m/hud/serve.ts",
    "m/server/http.ts",
    "m/server/later.ts",
  ]);
});

Deno.test("importCycles() finds a circle closed by a dynamic import()", async () => {
  const dir = await Deno.makeTempDir();
  const before = Deno.cwd();
  try {
    await Deno.mkdir(`${dir}/m`);
    await Deno.writeTextFile(
      `${dir}/m/run.ts`,
      'import type { Options } from "./serve.ts";\nexport type Run = Options;\n',
    );
    await Deno.writeTextFile(
      `${dir}/m/serve.ts`,
      'export type Options = { port: number };\nexport const run = () => import("./run.ts");\n',
    );
    await Deno.writeTextFile(`${dir}/m/alone.ts`, "export const x = 1;\n");
    Deno.chdir(dir);
    deepStrictEqual(await importCycles(["m"]), [["m/run.ts", "m/serve.ts"]]);
  } finally {
    Deno.chdir(before);
    await Deno.remove(dir, { recursive: true });
  }
});
