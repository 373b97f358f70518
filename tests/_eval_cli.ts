// What the report and replay suites share: `deno task eval` as a real
// subprocess, its results file read back, and whether Chromium is there.
import type { EvalResult } from "../eval/mod.ts";

/** The repository's root, with a trailing slash. */
export const ROOT: string = new URL("../", import.meta.url).pathname;

/** Debian's Chromium, which the browser tests drive. */
export const CHROMIUM = "/usr/bin/chromium";

/** The flags the browser tests start Chromium with (no network of its own). */
export const CHROMIUM_ARGS: string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
];

/**
 * Whether Chromium is installed; logs one line naming the suite when not.
 *
 * @param suite The suite that would skip.
 * @returns Whether it is.
 */
export function haveChromium(suite: string): boolean {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    console.log(
      `${suite}: skipped, ${CHROMIUM} not found (apt-get install -y chromium)`,
    );
    return false;
  }
}

/** What a `deno task eval` run printed and how it ended. */
export interface CliRun {
  /** The exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/**
 * Runs `deno task eval` (as `deno run -A eval/main.ts …`) in `cwd`, bounded
 * in time.
 *
 * @param args Its arguments.
 * @param cwd Where it runs.
 * @param timeoutMs How long it may take.
 * @returns What it printed and its exit code.
 */
export async function evalCli(
  args: string[],
  cwd: string,
  timeoutMs = 120_000,
): Promise<CliRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}eval/main.ts`, ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/**
 * A results file's lines, in task order.
 *
 * @param path The JSONL file.
 * @returns The results.
 */
export async function readResultsFile(path: string): Promise<EvalResult[]> {
  return (await Deno.readTextFile(path)).trim().split("\n").map((line) =>
    JSON.parse(line) as EvalResult
  ).sort((a, b) => a.task - b.task || a.repeat - b.repeat);
}
