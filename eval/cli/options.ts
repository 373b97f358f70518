/**
 * The command line of `deno task eval`: one table of options that both the
 * parser and `--help` read, the parsers of option values, and the
 * {@linkcode UsageError} a bad command line becomes (one line, exit 2).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { DEFAULT_TOOL_TIMEOUT_MS } from "../environments/contract.ts";
import {
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  type DisplaySize,
} from "../tool_host.ts";

/** One command-line option: how `parseArgs` reads it and how `--help` shows it. */
export interface OptionRow {
  /** `string` takes a value; `boolean` is a switch. */
  type: "string" | "boolean";
  /** The value's name in the help (`FILE`, `N`). */
  arg?: string;
  /** Whether it may be given more than once. */
  multiple?: boolean;
  /** One-letter alias. */
  short?: string;
  /** What it does, for `--help` (lines joined with "\n"). */
  help: string;
}

/**
 * Every option of `deno task eval`, one row each: the parser and the help
 * both read this table, so adding an option is adding a row.
 */
export const OPTIONS = {
  scenario: {
    type: "string",
    arg: "NAME",
    help: "run this scenario (default: every scenario, once)",
  },
  args: {
    type: "string",
    arg: "JSON",
    help: `its arguments, e.g. '{"target": 7}'`,
  },
  tasks: {
    type: "string",
    arg: "FILE",
    help: `a JSONL task file: {"scenario": …, "args": {…}} per line`,
  },
  repeat: {
    type: "string",
    arg: "K",
    help:
      "run every task K times; the summary gives pass@1 and pass@K\n(default 1)",
  },
  "pass-threshold": {
    type: "string",
    arg: "R",
    help: "the reward a run needs to count as passed (default 1)",
  },
  gateway: {
    type: "string",
    arg: "URL",
    help: "the gateway (default GATEWAY_URL; none: the built-in demo)",
  },
  key: {
    type: "string",
    arg: "KEY",
    help: "the caller key (default GATEWAY_KEY)",
  },
  model: { type: "string", arg: "ID", help: "the model (default gpt-4o-mini)" },
  concurrency: {
    type: "string",
    arg: "N",
    help:
      "runs at once, each on its own connection (default 1); an\nhttp environment must declare isolated runs",
  },
  "max-steps": {
    type: "string",
    arg: "N",
    help: "model calls per run at most (default 10)",
  },
  timeout: {
    type: "string",
    arg: "S",
    help: "seconds a run may take; longer is an error (default: no limit)",
  },
  retries: {
    type: "string",
    arg: "N",
    help:
      "tries again a run whose environment or gateway failed\nbefore the model answered (default 0)",
  },
  out: {
    type: "string",
    arg: "FILE",
    help:
      "results, JSONL: a new file (default\neval-results/<time>-<id>.jsonl)",
  },
  resume: {
    type: "string",
    arg: "FILE",
    help:
      "runs only the runs FILE has no score for, and appends\ntheir results to it",
  },
  "harness-token": {
    type: "string",
    arg: "T",
    help:
      "sent as _meta.harness_token, and to a stdio environment\nas MCP_HARNESS_TOKEN (default MCP_HARNESS_TOKEN)",
  },
  env: {
    type: "string",
    arg: "KEY=VALUE",
    multiple: true,
    help:
      "a variable for a stdio environment's process (repeatable;\nPATH, HOME and the like are passed anyway)",
  },
  convention: {
    type: "string",
    arg: "C",
    help:
      "chat, messages, responses or gemini (default: from the\nmodel's routes in the gateway's /models)",
  },
  display: {
    type: "string",
    arg: "WxH",
    help: "the screen size the environment is told (default 1280x800)",
  },
  "tool-timeout": {
    type: "string",
    arg: "S",
    help: `seconds a tool call may take; longer is an error (default ${
      DEFAULT_TOOL_TIMEOUT_MS / 1000
    })`,
  },
  "max-tool-result-bytes": {
    type: "string",
    arg: "N",
    help:
      `text of a tool result the model sees (default ${DEFAULT_MAX_TOOL_RESULT_BYTES})`,
  },
  "max-tool-result-images": {
    type: "string",
    arg: "N",
    help:
      `images of a tool result the model sees (default ${DEFAULT_MAX_TOOL_RESULT_IMAGES})`,
  },
  report: {
    type: "string",
    help:
      "also write the HTML report of the results beside them\n(--report=FILE to name it); deno task eval report\n<results.jsonl> [FILE] writes one from a results file",
  },
  record: {
    type: "string",
    arg: "DIR",
    help: "keep every model exchange of the run in DIR (a new folder)",
  },
  replay: {
    type: "string",
    arg: "DIR",
    help:
      "answer model calls from a recording: no gateway, cost $0;\nthe recorded tasks unless --tasks or --scenario; a run whose\nrequests differ from the recording is an error naming the step",
  },
  "docker-host": {
    type: "string",
    arg: "HOST",
    multiple: true,
    help:
      "a Docker daemon for docker:// runs (repeatable: runs go to\nthe one with the most free capacity; default: docker's own)",
  },
  "docker-cpus": {
    type: "string",
    arg: "N",
    help: "CPUs of one docker:// run's container (default 1)",
  },
  "docker-memory": {
    type: "string",
    arg: "SIZE",
    help: "memory of one docker:// run's container (default 2g)",
  },
  "docker-network-allow": {
    type: "string",
    arg: "host",
    help:
      'let scenarios that ask for it (network: "host") run with\nthe host\'s network; runs have none otherwise',
  },
  help: { type: "boolean", short: "h", help: "this help" },
} as const satisfies Record<string, OptionRow>;

/** `deno task eval --help`: the usage line and every option of {@linkcode OPTIONS}. */
export const USAGE: string = `Usage: deno task eval <environment> [options]

  <environment>        an http(s)://…/mcp URL, a script (.ts/.js, run as
                       \`deno run -A <file> stdio\`), docker://IMAGE[:TAG]
                       (a container per run, over stdio), or a command
${
  Object.entries(OPTIONS as Record<string, OptionRow>).map(([name, row]) => {
    const flag = `  --${name}${row.arg ? ` ${row.arg}` : ""}`;
    const [first, ...rest] = row.help.split("\n");
    return [
      flag.length < 23
        ? `${flag.padEnd(23)}${first}`
        : `${flag}\n${" ".repeat(23)}${first}`,
      ...rest.map((line) => `${" ".repeat(23)}${line}`),
    ].join("\n");
  }).join("\n")
}

Only the tools the scenario gives the agent are callable: a call of any
other is answered with an error and counted (refused_tool_calls). A run that
ends in an error after the model answered scores 0 in the mean and pass@k (an
agent cannot leave a task by crashing it); one that failed before (the
environment or gateway) is retried with --retries and, if it still fails,
left out with its task from every rate.`;

/** A command line the eval command cannot run: its message is the one line shown (exit code 2). */
export class UsageError extends Error {}

/** A positive integer option, or `fallback` when it is not given. */
export function parsePositive(
  value: string | undefined,
  name: string,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new UsageError(
      `--${name} must be a positive integer, got "${value}"`,
    );
  }
  return number;
}

/** `--display WIDTHxHEIGHT`, or `undefined` when it is not given. */
export function parseDisplay(
  value: string | undefined,
): DisplaySize | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d{2,5})[x×](\d{2,5})$/.exec(value.trim());
  const width = Number(match?.[1]);
  const height = Number(match?.[2]);
  if (!match || width < 1 || height < 1 || width > 10000 || height > 10000) {
    throw new UsageError(
      `--display must be WIDTHxHEIGHT in pixels, e.g. 1280x800, got "${value}"`,
    );
  }
  return { width, height };
}

/** `--env KEY=VALUE` options as variables. */
export function parseEnv(values: string[] | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const value of values ?? []) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(value);
    if (!match) {
      throw new UsageError(`--env must be KEY=VALUE, got "${value}"`);
    }
    env[match[1]] = match[2];
  }
  return env;
}

/** `--args`: a JSON object, `{}` when not given. */
export function parseJsonArgs(
  text: string | undefined,
): Record<string, unknown> {
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text);
    if (typeof value === "object" && value && !Array.isArray(value)) {
      return value;
    }
  } catch {
    // reported below
  }
  throw new UsageError(`--args must be a JSON object, got ${text}`);
}

/** A positive number of seconds, as ms. */
export function parseSeconds(
  value: string | undefined,
  name: string,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0 || number > 86_400 * 7) {
    throw new UsageError(
      `--${name} must be a positive number of seconds, got "${value}"`,
    );
  }
  return Math.round(number * 1000);
}

/** An integer option from 0 to 100, or `fallback` when it is not given. */
export function parseCount(
  value: string | undefined,
  name: string,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0 || number > 100) {
    throw new UsageError(
      `--${name} must be an integer from 0 to 100, got "${value}"`,
    );
  }
  return number;
}

/** `--pass-threshold`: a number, 1 when not given. */
export function parseThreshold(value: string | undefined): number {
  if (value === undefined) return 1;
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number)) {
    throw new UsageError(`--pass-threshold must be a number, got "${value}"`);
  }
  return number;
}

/**
 * Reads the command line against {@linkcode OPTIONS}: a flag that is not
 * there, or a value missing, is one line naming it (and the option meant).
 */
export function parseCommandLine(
  argv: string[],
): ReturnType<
  typeof parseArgs<{
    args: string[];
    allowPositionals: true;
    options: typeof OPTIONS;
    strict: true;
  }>
> {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: OPTIONS,
      strict: true,
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const flag = /'(-[^' ]+)/.exec((error as Error).message)?.[1] ?? "";
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const meant = closestOption(flag.replace(/^-+/, "").split("=")[0]);
      throw new UsageError(
        `Unknown option "${flag}"${
          meant ? ` (did you mean --${meant}?)` : ""
        }: deno task eval --help lists the options`,
      );
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const first = (error as Error).message.split("\n")[0].replace(/\.$/, "");
      const hint = /ambiguous/.test(first)
        ? ` (a value starting with "-" goes as --name=value)`
        : "";
      throw new UsageError(
        `${first}${hint}: deno task eval --help lists the options`,
      );
    }
    throw error;
  }
}

/** The option a mistyped name most likely meant, if one is close. */
function closestOption(name: string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const option of Object.keys(OPTIONS)) {
    const distance = editDistance(name, option);
    if (distance < bestDistance) [best, bestDistance] = [option, distance];
  }
  return bestDistance <= Math.max(1, Math.floor(name.length / 3))
    ? best
    : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        previous[j] + 1,
        row[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = row;
  }
  return previous[b.length];
}
