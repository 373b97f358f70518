/**
 * `deno run -A scripts/vendor_uplot.ts [version]`: writes uPlot (MIT, the
 * charting library of the console pages) into `gateway/http/console/_uplot.ts` as
 * string constants, so the gateway serves it itself: no CDN, and it ships
 * inside a JSR package and a compiled binary alike. Needs `npm` and `tar`.
 *
 * @module
 */
const version = Deno.args[0] ?? "1.6.32";
const dir = await Deno.makeTempDir();
try {
  const pack = await new Deno.Command("npm", {
    args: ["pack", `uplot@${version}`, "--silent"],
    cwd: dir,
  }).output();
  if (!pack.success) throw new Error(new TextDecoder().decode(pack.stderr));
  const tarball = new TextDecoder().decode(pack.stdout).trim();
  await new Deno.Command("tar", { args: ["xzf", tarball], cwd: dir }).output();
  const js = await Deno.readTextFile(`${dir}/package/dist/uPlot.iife.min.js`);
  const css = await Deno.readTextFile(`${dir}/package/dist/uPlot.min.css`);
  const license = await Deno.readTextFile(`${dir}/package/LICENSE`);
  const out = new URL("../gateway/http/console/_uplot.ts", import.meta.url);
  await Deno.writeTextFile(
    out,
    `// uPlot ${version} (https://github.com/leeoniya/uPlot), vendored by
// scripts/vendor_uplot.ts; do not edit. Its licence:
${license.trim().split("\n").map((line) => `// ${line}`.trimEnd()).join("\n")}

/** uPlot's IIFE build (defines \`uPlot\`). */
export const UPLOT_JS: string = ${JSON.stringify(js)};

/** uPlot's stylesheet. */
export const UPLOT_CSS: string = ${JSON.stringify(css)};

/** The vendored version. */
export const UPLOT_VERSION = ${JSON.stringify(version)};
`,
  );
  console.log(`wrote ${out.pathname} (uPlot ${version}, ${js.length} bytes)`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
