/**
 * What the README's eval commands leave behind (`--record runs/game`, the
 * results, reports and images under `eval-results/`, the older
 * `eval-results.jsonl`) is ignored by git, `deno fmt`, `deno lint` and
 * `deno publish`: checked with the repository's own `deno.json` and
 * `.gitignore` in a scratch copy, with the real tools.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ROOT } from "./_eval_cli.ts";

/** Files as the README's commands write them, deliberately unformatted. */
const LEFT_BEHIND = [
  "runs/game/recording.json",
  "runs/game/exchanges/0b6c/1.json",
  "runs/game/blobs/ab12.png",
  "eval-results/2026-11-26T20-49-01Z-3f9c0a1b.jsonl",
  "eval-results/2026-11-26T20-49-01Z-3f9c0a1b.html",
  "eval-results/2026-11-26T20-49-01Z-3f9c0a1b.images/ab12.png",
  "eval-results.jsonl",
  "eval-results.html",
  "eval-results.images/ab12.png",
];

async function run(dir: string, ...args: string[]) {
  const [command, ...rest] = args;
  const output = await new Deno.Command(
    command === "deno" ? Deno.execPath() : command,
    {
      args: rest,
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdin: "null",
      signal: AbortSignal.timeout(60_000),
    },
  ).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    out: text.decode(output.stdout) + text.decode(output.stderr),
  };
}

Deno.test("recordings, results and reports of the README's commands are ignored by git, deno fmt, deno lint and deno publish", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-ignored-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    // The package as it is, but for its code: one small module.
    config.exports = { ".": "./mod.ts" };
    await Deno.writeTextFile(
      `${dir}/deno.json`,
      JSON.stringify(config, null, 2) + "\n",
    );
    await Deno.copyFile(`${ROOT}.gitignore`, `${dir}/.gitignore`);
    await Deno.writeTextFile(
      `${dir}/mod.ts`,
      "/** One. */\nexport const one: number = 1;\n",
    );
    for (const file of LEFT_BEHIND) {
      if (file.includes("/")) {
        await Deno.mkdir(`${dir}/${file.replace(/\/[^/]+$/, "")}`, {
          recursive: true,
        });
      }
      await Deno.writeTextFile(
        `${dir}/${file}`,
        file.endsWith(".html") ? "<p>x" : '{"task":0,   "reward":1}',
      );
    }
    await Deno.writeTextFile(`${dir}/runs/game/helper.ts`, "let  x=1");
    LEFT_BEHIND.push("runs/game/helper.ts");

    const fmt = await run(dir, "deno", "fmt", "--check");
    assert.equal(fmt.code, 0, fmt.out);
    const lint = await run(dir, "deno", "lint");
    assert.equal(lint.code, 0, lint.out);

    const git = await run(dir, "git", "init", "-q");
    if (git.code !== 0) throw new Error(git.out);
    const status = await run(
      dir,
      "git",
      "status",
      "--porcelain",
      "--untracked-files=all",
    );
    assert.deepEqual(
      status.out.trim().split("\n").map((line) => line.slice(3)).sort(),
      [".gitignore", "deno.json", "mod.ts"],
    );

    const publish = await run(
      dir,
      "deno",
      "publish",
      "--dry-run",
      "--allow-dirty",
    );
    assert.equal(publish.code, 0, publish.out);
    assert.match(publish.out, /mod\.ts/);
    for (const file of LEFT_BEHIND) {
      assert.ok(!publish.out.includes(file), `${file} would be published`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
