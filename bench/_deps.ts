/**
 * Installs what the benchmarks need and finds their versions: `wrk` from
 * Debian, and Portkey's gateway, fastmcp and the SDK from npm into
 * `bench/.cache/node` (ignored by git; never a package.json at the root).
 *
 * @module
 */
import { runText } from "./_process.ts";

/** The npm packages run on Node, pinned. */
export const NODE_PACKAGES: Record<string, string> = {
  "@portkey-ai/gateway": "1.15.2",
  "fastmcp": "4.20.16",
  "zod": "4.6.7",
};

/** Where the Node packages are installed. */
export const NODE_DIR: string =
  new URL("./.cache/node", import.meta.url).pathname;

async function has(command: string): Promise<boolean> {
  try {
    await runText("sh", ["-c", `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs `wrk` and `rsvg-convert` (apt) and the Node packages when missing.
 *
 * @param log Progress lines.
 */
export async function ensureDependencies(
  log: (line: string) => void,
): Promise<void> {
  if (!(await has("wrk"))) {
    log("installing wrk with apt-get");
    await runText("sh", [
      "-c",
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk",
    ]);
  }
  if (!(await has("rsvg-convert"))) {
    log("installing librsvg2-bin (rsvg-convert) with apt-get");
    await runText("sh", [
      "-c",
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librsvg2-bin",
    ]);
  }
  if (!(await has("node"))) {
    throw new Error(
      'Cannot run Portkey and fastmcp: install Node.js 20 or later ("apt-get install nodejs npm")',
    );
  }
  const manifest = JSON.stringify(
    { private: true, type: "module", dependencies: NODE_PACKAGES },
    null,
    2,
  );
  await Deno.mkdir(NODE_DIR, { recursive: true });
  const manifestPath = `${NODE_DIR}/package.json`;
  const current = await Deno.readTextFile(manifestPath).catch(() => "");
  const installed = await Deno.stat(
    `${NODE_DIR}/node_modules/@portkey-ai/gateway/package.json`,
  ).then(() => true, () => false);
  if (current !== manifest || !installed) {
    log(`installing ${Object.keys(NODE_PACKAGES).join(", ")} with npm`);
    await Deno.writeTextFile(manifestPath, manifest);
    await runText("npm", ["install", "--no-audit", "--no-fund", "--silent"], {
      cwd: NODE_DIR,
    });
  }
}

/** Versions of everything measured or measuring. */
export interface Versions {
  /** Name → version text. */
  [name: string]: string;
}

async function packageVersion(name: string): Promise<string> {
  const text = await Deno.readTextFile(
    `${NODE_DIR}/node_modules/${name}/package.json`,
  );
  return (JSON.parse(text) as { version: string }).version;
}

/**
 * Reads the versions of Deno, Node, wrk and the Node packages.
 *
 * @returns Name → version.
 */
export async function versions(): Promise<Versions> {
  const wrk = await new Deno.Command("wrk", { args: ["-v"], stdout: "piped" })
    .output();
  const wrkLine = new TextDecoder().decode(wrk.stdout).split("\n")[0];
  return {
    deno: `${Deno.version.deno} (V8 ${Deno.version.v8})`,
    node: await runText("node", ["--version"]),
    wrk: wrkLine.replace(/ \[.*$/, ""),
    "@portkey-ai/gateway": await packageVersion("@portkey-ai/gateway"),
    fastmcp: await packageVersion("fastmcp"),
    "@modelcontextprotocol/sdk (Deno, from deno.json)": "1.32.2",
  };
}
