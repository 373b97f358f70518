/**
 * `deno task eval <environment> [options]`: runs an environment's scenarios
 * with an agent loop against a model through the gateway, and writes one
 * JSONL result per task plus a summary table. Without `--gateway` it starts
 * the demo (provider simulator and gateway, in this process), where the
 * simulated model plays a scripted agent: it calls the tools the prompt
 * names in backticks, then answers (or, given a computer tool and on-screen
 * instructions, plays a computer-use agent). The model is spoken to in its
 * native convention, from its routes in the gateway's `/models`.
 *
 * @module
 */
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError } from "../gateway/config.ts";
import { type Demo, startDemo } from "../gateway/cli/demo.ts";
import { type Convention, usdToMicros } from "./agent.ts";
import {
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  type DisplaySize,
} from "./tool_host.ts";
import { gatewayTransport, isObject } from "./agents/loop.ts";
import { conventionForRoutes, parseConvention } from "./convention.ts";
import {
  type ConnectOptions,
  DEFAULT_TOOL_TIMEOUT_MS,
  Environment,
} from "./environment.ts";
import { EnvironmentError, parseTarget } from "./target.ts";
import { Recorder, Replayer } from "./record.ts";
import { imagesDirFor, storeImages, writeReport } from "./report.ts";
import {
  concurrencyRefusal,
  type EvalResult,
  type EvalTask,
  parseTasks,
  runEval,
  runIdentity,
  summaryTable,
} from "./runner.ts";

/** One command-line option: how `parseArgs` reads it and how `--help` shows it. */
interface OptionRow {
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
const OPTIONS = {
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
      "tries again a run whose environment or gateway failed\n(never a low reward; default 0)",
  },
  out: {
    type: "string",
    arg: "FILE",
    help: "results, JSONL (default eval-results/<time>.jsonl)",
  },
  resume: {
    type: "string",
    arg: "FILE",
    help:
      "runs only the tasks FILE has no result for (or an error),\nand adds their results to it",
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
  help: { type: "boolean", short: "h", help: "this help" },
} as const satisfies Record<string, OptionRow>;

const USAGE = `Usage: deno task eval <environment> [options]

  <environment>        an http(s)://…/mcp URL, a script (.ts/.js, run as
                       \`deno run -A <file> stdio\`), or a command
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
fails is an error (reward null), not a zero, and is left out of the mean.`;

class UsageError extends Error {}

function positive(value: string | undefined, name: string, fallback: number) {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new UsageError(
      `--${name} must be a positive integer, got "${value}"`,
    );
  }
  return number;
}

function parseDisplay(value: string | undefined): DisplaySize | undefined {
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

function parseEnv(values: string[] | undefined): Record<string, string> {
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

function parseJsonArgs(text: string | undefined): Record<string, unknown> {
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
function seconds(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0 || number > 86_400 * 7) {
    throw new UsageError(
      `--${name} must be a positive number of seconds, got "${value}"`,
    );
  }
  return Math.round(number * 1000);
}

function count(value: string | undefined, name: string, fallback: number) {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0 || number > 100) {
    throw new UsageError(
      `--${name} must be an integer from 0 to 100, got "${value}"`,
    );
  }
  return number;
}

function threshold(value: string | undefined): number {
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
function parseCommandLine(argv: string[]) {
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

/** A one-line progress display on stderr. */
function progress(total: number) {
  const tty = Deno.stderr.isTerminal();
  const encoder = new TextEncoder();
  let done = 0;
  let rewarded = 0;
  let rewards = 0;
  let errors = 0;
  let cost = 0;
  return (result: EvalResult) => {
    done++;
    if (result.reward === null) errors++;
    else {
      rewarded++;
      rewards += result.reward;
    }
    cost += result.cost_usd;
    const width = 24;
    const filled = Math.round((done / total) * width);
    const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
    const line = `${bar} ${done}/${total} runs  mean reward ${
      rewarded > 0 ? (rewards / rewarded).toFixed(3) : "-"
    }${errors > 0 ? `  ${errors} error(s)` : ""}  $${cost.toFixed(6)}${
      result.error ? `  (task ${result.task}: ${result.error})` : ""
    }`;
    Deno.stderr.writeSync(
      encoder.encode(
        tty ? `\r\x1b[2K${line}${done === total ? "\n" : ""}` : `${line}\n`,
      ),
    );
  };
}

async function balanceMicros(gatewayUrl: string, key: string) {
  const response = await fetch(`${gatewayUrl}/v1/credits`, {
    headers: { authorization: `Bearer ${key}` },
  }).catch(() => undefined);
  if (!response?.ok) {
    await response?.body?.cancel();
    return undefined;
  }
  const body = await response.json().catch(() => ({}));
  return usdToMicros(String(body.balance));
}

/**
 * Checks the gateway before any task starts: that it answers, that it knows
 * the model (and can serve it), and that it takes the key and the key has
 * credits. Each failure is one line.
 *
 * @returns The model's convention from its routes.
 */
async function checkGateway(
  gatewayUrl: string,
  key: string,
  model: string,
): Promise<Convention> {
  const get = async (path: string, auth: boolean) => {
    try {
      const response = await fetch(`${gatewayUrl}${path}`, {
        headers: auth ? { authorization: `Bearer ${key}` } : {},
        signal: AbortSignal.timeout(15_000),
      });
      const body = await response.json().catch(() => ({}));
      return { status: response.status, body: isObject(body) ? body : {} };
    } catch (error) {
      throw new UsageError(
        `Cannot reach the gateway at ${gatewayUrl}: ${
          (error as Error).name === "TimeoutError"
            ? "no answer within 15 s"
            : "nothing answers there"
        }`,
      );
    }
  };
  const reason = (body: Record<string, unknown>) => {
    const error = isObject(body.error) ? body.error : {};
    return typeof error.message === "string"
      ? error.message
      : "no reason given";
  };
  const credits = await get("/v1/credits", true);
  if (credits.status === 401 || credits.status === 403) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} refused the key (${credits.status}): ${
        reason(credits.body)
      }`,
    );
  }
  if (credits.status !== 200) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} did not answer GET /v1/credits (${credits.status}): is it an mcpkit gateway?`,
    );
  }
  if (usdToMicros(String(credits.body.balance)) <= 0) {
    throw new UsageError(
      `The key has no credits left at ${gatewayUrl} (balance $${
        String(credits.body.balance)
      })`,
    );
  }
  const info = await get(`/v1/models/${encodeURIComponent(model)}`, false);
  if (info.status === 404) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} has no model "${model}": GET /v1/models lists them`,
    );
  }
  if (info.status !== 200) {
    throw new UsageError(
      `The gateway at ${gatewayUrl} did not answer GET /v1/models/${model} (${info.status}): ${
        reason(info.body)
      }`,
    );
  }
  if (info.body.available === false) {
    throw new UsageError(
      `The model "${model}" cannot be served: ${
        String(info.body.unavailable_reason ?? "its provider has no key")
      }`,
    );
  }
  const routes = Array.isArray(info.body.routes)
    ? info.body.routes.filter((r): r is string => typeof r === "string")
    : [];
  return routes.length > 0 ? conventionForRoutes(routes) : "chat";
}

/**
 * Reads a results file to resume: its results, a torn last line (the run
 * was killed mid-write) left out.
 */
async function readResults(file: string): Promise<EvalResult[]> {
  let text;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    throw new UsageError(
      `Cannot read the results to resume, ${file}: ${(error as Error).message}`,
    );
  }
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const results: EvalResult[] = [];
  lines.forEach((line, i) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) return; // torn by a kill: run it again
      throw new UsageError(`${file} line ${i + 1} is not JSON: cannot resume`);
    }
    const result = value as EvalResult;
    if (
      !isObject(value) || typeof result.task !== "number" ||
      typeof result.scenario !== "string"
    ) {
      throw new UsageError(
        `${file} line ${i + 1} is not an eval result: cannot resume`,
      );
    }
    results.push({ ...result, repeat: result.repeat ?? 0 });
  });
  return results;
}

/** The default results file: a new one per run, in a folder git ignores. */
function defaultOut(): string {
  const stamp = new Date().toISOString().replace(/:/g, "-").replace(
    /\.\d+Z$/,
    "Z",
  );
  return `eval-results/${stamp}.jsonl`;
}

/** `deno task eval report <results.jsonl> [report.html]`. */
async function reportCommand(args: string[]): Promise<number> {
  if (args.length < 1 || args.length > 2 || args[0].startsWith("-")) {
    throw new UsageError(
      "Usage: deno task eval report <results.jsonl> [report.html]",
    );
  }
  const written = await writeReport(args[0], args[1]).catch((error) => {
    throw new UsageError(error.message);
  });
  console.log(`Report of ${written.tasks} task(s) in ${written.path}`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "report") return await reportCommand(argv.slice(1));
  const { values, positionals } = parseCommandLine(
    argv.map((arg) => arg === "--report" ? "--report=" : arg),
  );
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError(USAGE);
  const target = parseTarget(positionals[0], positionals.slice(1));
  if (values.record && values.replay) {
    throw new UsageError("--record and --replay cannot be used together");
  }
  const replay = values.replay === undefined
    ? undefined
    : await Replayer.open(values.replay).catch((error) => {
      throw new UsageError(`--replay: ${error.message}`);
    });
  const repeat = positive(values.repeat, "repeat", replay?.repeat ?? 1);
  const concurrency = positive(values.concurrency, "concurrency", 1);
  const maxSteps = positive(values["max-steps"], "max-steps", 10);
  const retries = count(values.retries, "retries", 0);
  const timeoutMs = seconds(values.timeout, "timeout");
  const passThreshold = threshold(values["pass-threshold"]);
  if (values.resume && values.out && values.out !== values.resume) {
    throw new UsageError(
      "--resume adds to its own file: leave out --out (or give the same file)",
    );
  }
  const out = values.resume ?? values.out ?? defaultOut();
  const harnessToken = values["harness-token"] ??
    Deno.env.get("MCP_HARNESS_TOKEN");
  let convention: Convention | undefined;
  if (values.convention !== undefined) {
    try {
      convention = parseConvention(values.convention);
    } catch (error) {
      throw new UsageError(`--convention: ${(error as Error).message}`);
    }
  }
  const connect: ConnectOptions = {
    harnessToken,
    env: parseEnv(values.env),
    display: parseDisplay(values.display),
    toolTimeoutMs: positive(
      values["tool-timeout"],
      "tool-timeout",
      DEFAULT_TOOL_TIMEOUT_MS / 1000,
    ) * 1000,
    maxToolResultBytes: positive(
      values["max-tool-result-bytes"],
      "max-tool-result-bytes",
      DEFAULT_MAX_TOOL_RESULT_BYTES,
    ),
    maxToolResultImages: positive(
      values["max-tool-result-images"],
      "max-tool-result-images",
      DEFAULT_MAX_TOOL_RESULT_IMAGES,
    ),
  };
  if (!("command" in target) && values.env?.length) {
    console.error(
      "--env applies to environments the runner starts; an http(s) or tcp:// environment keeps its own",
    );
  }

  let tasks: EvalTask[];
  if (values.tasks) {
    let text;
    try {
      text = await Deno.readTextFile(values.tasks);
    } catch (error) {
      throw new UsageError(
        `Cannot read the task file ${values.tasks}: ${
          (error as Error).message
        }`,
      );
    }
    tasks = parseTasks(text);
  } else tasks = replay && !values.scenario ? replay.tasks : [];
  const earlier = values.resume ? await readResults(values.resume) : [];

  // One connection up front: the scenarios the environment offers, and
  // whether it isolates concurrent runs.
  const probe = await Environment.connect(target, connect).catch(
    (error) => {
      throw new UsageError(error.message);
    },
  );
  const offered = await probe.scenarios().finally(() => probe.close());
  const refusal = concurrencyRefusal(probe, target, concurrency);
  if (refusal) throw new UsageError(refusal);
  const names = offered.map((s) => s.name);
  if (values.scenario) {
    tasks = [{ scenario: values.scenario, args: parseJsonArgs(values.args) }];
  } else if (!values.tasks && !replay) {
    tasks = names.map((scenario) => ({ scenario, args: {} }));
  }
  if (names.length === 0) {
    throw new UsageError(
      `The environment ${probe.name} has no scenarios (no prompts named "${probe.name}:<scenario>")`,
    );
  }
  const unknown = tasks.filter((task) => !names.includes(task.scenario));
  if (unknown.length > 0) {
    throw new UsageError(
      `Unknown scenario "${unknown[0].scenario}": ${probe.name} offers ${
        names.join(", ")
      }`,
    );
  }
  const planned = new Set(
    tasks.flatMap((task, index) =>
      Array.from(
        { length: repeat },
        (_, r) => runIdentity({ ...task, task: index, repeat: r }),
      )
    ),
  );
  const foreign = earlier.find((result) => !planned.has(runIdentity(result)));
  if (foreign) {
    throw new UsageError(
      `${values.resume} holds a result of another task (task ${foreign.task}, ${foreign.scenario} ${
        JSON.stringify(foreign.args)
      }, repeat ${foreign.repeat}): resume with the same tasks and --repeat`,
    );
  }

  // One results file, one model: a mean over two models means neither.
  const wanted = values.model ?? replay?.index.model ?? "gpt-4o-mini";
  const otherModel = earlier.find((r) =>
    typeof r.model === "string" && r.model !== wanted
  );
  if (otherModel) {
    throw new UsageError(
      `${values.resume} holds results of the model ${
        JSON.stringify(otherModel.model).slice(0, 100)
      }: resume with --model ${otherModel.model}`,
    );
  }

  let demo: Demo | undefined;
  let gatewayUrl = (values.gateway ?? Deno.env.get("GATEWAY_URL"))?.replace(
    /\/+$/,
    "",
  );
  let key = values.key ?? Deno.env.get("GATEWAY_KEY");
  if (!gatewayUrl && !replay) {
    demo = await startDemo({ quiet: true, port: 0 });
    gatewayUrl = demo.gateway.url;
    key = demo.callerKey;
    console.error(
      `No --gateway: using the demo gateway at ${gatewayUrl} (simulated models, $${demo.creditsUsd} of demo credits)`,
    );
  }
  const controller = new AbortController();
  const onInterrupt = () => {
    console.error("\nStopping: no new runs; results so far are kept");
    controller.abort();
  };
  try {
    // A replay contacts no gateway: the recording answers every model call.
    const model = values.model ?? replay?.index.model ?? "gpt-4o-mini";
    if (replay) {
      gatewayUrl = key = "";
    } else if (!gatewayUrl || !/^https?:\/\/[^/]/.test(gatewayUrl)) {
      throw new UsageError(
        `--gateway must be an http(s) URL, got "${gatewayUrl}"`,
      );
    }
    if (!key && !replay) {
      throw new UsageError("--key (or GATEWAY_KEY) is needed with a gateway");
    }
    const routed = replay
      ? replay.index.convention
      : await checkGateway(gatewayUrl, key!, model);
    convention ??= routed;
    const recorder = values.record === undefined
      ? undefined
      : await Recorder.create(values.record).catch((error) => {
        throw new UsageError(`--record: ${error.message}`);
      });
    const transport = replay?.transport ??
      recorder?.wrap(gatewayTransport({ gatewayUrl, key: key! }));

    // Resuming keeps the finished runs (each once) and drops the rest.
    const completed = earlier.filter((result) => !result.error);
    await Deno.mkdir(dirname(out), { recursive: true });
    const kept = new Map(completed.map((r) => [runIdentity(r), r]));
    await Deno.writeTextFile(
      `${out}.tmp`,
      [...kept.values()].map((r) => JSON.stringify(r) + "\n").join(""),
    );
    await Deno.rename(`${out}.tmp`, out);

    Deno.addSignalListener("SIGINT", onInterrupt);
    const remaining = planned.size - kept.size;
    const show = progress(remaining);
    const before = replay ? undefined : await balanceMicros(gatewayUrl, key!);
    console.error(
      `Running ${remaining} task(s) of ${probe.name} with ${model} (${convention}), ${concurrency} at a time${
        kept.size > 0 ? ` (${kept.size} already in ${out})` : ""
      }`,
    );
    const { results, stopped } = await runEval({
      target,
      tasks,
      repeat,
      // The errored ones are run again; their cost goes into the new result.
      completed: [...kept.values(), ...earlier.filter((r) => r.error)],
      endpoint: { gatewayUrl, key: key!, model, transport },
      concurrency,
      maxSteps,
      retries,
      timeoutMs,
      ...connect,
      convention,
      signal: controller.signal,
      onResult: async (result) => {
        const line = await storeImages(result, imagesDirFor(out));
        await Deno.writeTextFile(out, JSON.stringify(line) + "\n", {
          append: true,
        });
        show(result);
      },
    });
    const after = replay ? undefined : await balanceMicros(gatewayUrl, key!);
    await recorder?.finish(model, convention, results);
    console.log(summaryTable(results, passThreshold));
    const fresh = results.filter((r) => !kept.has(runIdentity(r)));
    // A run done again carries what it cost in the earlier eval: not spent now.
    const spentBefore = new Map<string, number>();
    for (const r of earlier.filter((r) => r.error)) {
      const id = runIdentity(r);
      spentBefore.set(
        id,
        (spentBefore.get(id) ?? 0) + (Number(r.cost_usd) || 0),
      );
    }
    const spent = fresh.reduce(
      (sum, r) => sum + r.cost_usd - (spentBefore.get(runIdentity(r)) ?? 0),
      0,
    );
    const ledger = before !== undefined && after !== undefined
      ? `; the gateway's ledger charged $${
        ((before - after) / 1_000_000).toFixed(6)
      }`
      : "";
    console.log(
      `\n${results.length} result(s) in ${out}; model calls cost $${
        spent.toFixed(6)
      }${ledger}`,
    );
    const failed = results.filter((r) => r.error);
    if (failed.length > 0) {
      const kinds = new Map<string, number>();
      for (const r of failed) {
        const kind = r.error_kind ?? "task";
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      console.log(
        `${failed.length} run(s) ended in an error (${
          [...kinds].map(([kind, n]) => `${kind} ${n}`).join(", ")
        }), not counted in the mean; --resume ${out} runs them again`,
      );
    }
    const refused = results.reduce((sum, r) => sum + r.refused_tool_calls, 0);
    if (refused > 0) {
      console.log(
        `${refused} call(s) of tools the agent was not given were refused`,
      );
    }
    const checks = results.reduce((sum, r) => sum + r.safety_checks.length, 0);
    if (checks > 0) {
      console.log(`${checks} safety check(s) acknowledged`);
    }
    if (recorder) console.log(`Model exchanges recorded in ${recorder.dir}`);
    if (replay) {
      console.log(
        `Replayed from ${replay.dir}: no model was called, the cost is $0`,
      );
    }
    if (values.report !== undefined) {
      const written = await writeReport(out, values.report || undefined);
      console.log(`Report in ${written.path}`);
    }
    return stopped ? 130 : failed.length > 0 ? 1 : 0;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
    await demo?.close();
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    if (
      error instanceof UsageError || error instanceof ConfigError ||
      (error instanceof Error && /^Task line /.test(error.message))
    ) {
      console.error(error.message);
      Deno.exit(2);
    }
    if (error instanceof EnvironmentError) {
      console.error(error.message);
      Deno.exit(1);
    }
    throw error;
  }
}

export { main };
