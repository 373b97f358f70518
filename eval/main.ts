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
import { parseArgs } from "node:util";
import { ConfigError } from "../gateway/config.ts";
import { type Demo, startDemo } from "../gateway/demo.ts";
import { type Convention, type DisplaySize, usdToMicros } from "./agent.ts";
import { modelConvention, parseConvention } from "./convention.ts";
import {
  type ConnectOptions,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  DEFAULT_TOOL_TIMEOUT_MS,
  Environment,
  parseTarget,
} from "./environment.ts";
import {
  type EvalResult,
  type EvalTask,
  parseTasks,
  runEval,
  summaryTable,
} from "./runner.ts";

const USAGE = `Usage: deno task eval <environment> [options]

  <environment>        an http(s)://…/mcp URL, a script (.ts/.js, run as
                       \`deno run -A <file> stdio\`), or a command
  --scenario NAME      run this scenario (default: every scenario, once)
  --args JSON          its arguments, e.g. '{"target": 7}'
  --tasks FILE         a JSONL task file: {"scenario": …, "args": {…}} per line
  --repeat N           run every task N times (default 1)
  --gateway URL        the gateway (default GATEWAY_URL; none: the built-in demo)
  --key KEY            the caller key (default GATEWAY_KEY)
  --model ID           the model (default gpt-4o-mini)
  --concurrency N      runs at once, each on its own connection (default 1)
  --max-steps N        model calls per run at most (default 10)
  --out FILE           results, JSONL (default eval-results.jsonl)
  --harness-token T    sent as _meta.harness_token, and to a stdio environment
                       as MCP_HARNESS_TOKEN (default MCP_HARNESS_TOKEN)
  --env KEY=VALUE      a variable for a stdio environment's process (repeatable;
                       PATH, HOME and the like are passed anyway)
  --convention C       chat, messages, responses or gemini (default: from the
                       model's routes in the gateway's /models)
  --display WxH        the screen size the environment is told (default 1280x800)
  --tool-timeout S     seconds a tool call may take; longer is an error (default ${
  DEFAULT_TOOL_TIMEOUT_MS / 1000
})
  --max-tool-result-bytes N   text of a tool result the model sees (default ${DEFAULT_MAX_TOOL_RESULT_BYTES})
  --max-tool-result-images N  images of a tool result the model sees (default ${DEFAULT_MAX_TOOL_RESULT_IMAGES})

Only the tools the scenario gives the agent are callable: a call of any
other is answered with an error and counted (refused_tool_calls).`;

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

/** A one-line progress display on stderr. */
function progress(total: number) {
  const tty = Deno.stderr.isTerminal();
  const encoder = new TextEncoder();
  let done = 0;
  let rewards = 0;
  let cost = 0;
  return (result: EvalResult) => {
    done++;
    rewards += result.reward;
    cost += result.cost_usd;
    const width = 24;
    const filled = Math.round((done / total) * width);
    const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
    const line = `${bar} ${done}/${total} runs  mean reward ${
      (rewards / done).toFixed(3)
    }  $${cost.toFixed(6)}${
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
  });
  if (!response.ok) {
    await response.body?.cancel();
    return undefined;
  }
  const body = await response.json();
  return usdToMicros(String(body.balance));
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      scenario: { type: "string" },
      args: { type: "string" },
      tasks: { type: "string" },
      repeat: { type: "string" },
      gateway: { type: "string" },
      key: { type: "string" },
      model: { type: "string" },
      concurrency: { type: "string" },
      "max-steps": { type: "string" },
      out: { type: "string" },
      "harness-token": { type: "string" },
      env: { type: "string", multiple: true },
      convention: { type: "string" },
      display: { type: "string" },
      "tool-timeout": { type: "string" },
      "max-tool-result-bytes": { type: "string" },
      "max-tool-result-images": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError(USAGE);
  const target = parseTarget(positionals[0], positionals.slice(1));
  const repeat = positive(values.repeat, "repeat", 1);
  const concurrency = positive(values.concurrency, "concurrency", 1);
  const maxSteps = positive(values["max-steps"], "max-steps", 10);
  const out = values.out ?? "eval-results.jsonl";
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
  if ("url" in target && values.env?.length) {
    console.error(
      "--env applies to environments the runner starts; an http(s) environment keeps its own",
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
  } else tasks = [];

  // One connection up front: the scenarios the environment offers.
  const probe = await Environment.connect(target, connect).catch(
    (error) => {
      throw new UsageError(
        `Cannot connect to the environment ${positionals[0]}: ${error.message}`,
      );
    },
  );
  const offered = await probe.scenarios().finally(() => probe.close());
  const names = offered.map((s) => s.name);
  if (values.scenario) {
    tasks = [{ scenario: values.scenario, args: parseJsonArgs(values.args) }];
  } else if (!values.tasks) {
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
  tasks = Array.from({ length: repeat }, () => tasks).flat();

  let demo: Demo | undefined;
  let gatewayUrl = values.gateway ?? Deno.env.get("GATEWAY_URL");
  let key = values.key ?? Deno.env.get("GATEWAY_KEY");
  if (!gatewayUrl) {
    demo = await startDemo({ quiet: true, port: 0 });
    gatewayUrl = demo.gateway.url;
    key = demo.callerKey;
    console.error(
      `No --gateway: using the demo gateway at ${gatewayUrl} (simulated models, $${demo.creditsUsd} of demo credits)`,
    );
  }
  if (!key) {
    throw new UsageError("--key (or GATEWAY_KEY) is needed with a gateway");
  }
  const model = values.model ?? "gpt-4o-mini";
  convention ??= await modelConvention(gatewayUrl, model).catch((error) => {
    throw new UsageError(
      `Cannot reach the gateway at ${gatewayUrl}: ${error.message}`,
    );
  });

  const controller = new AbortController();
  const onInterrupt = () => {
    console.error("\nStopping: no new runs; results so far are kept");
    controller.abort();
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  await Deno.writeTextFile(out, "");
  const show = progress(tasks.length);
  try {
    const before = await balanceMicros(gatewayUrl, key);
    console.error(
      `Running ${tasks.length} task(s) of ${probe.name} with ${model} (${convention}), ${concurrency} at a time`,
    );
    const { results, stopped } = await runEval({
      target,
      tasks,
      endpoint: { gatewayUrl, key, model },
      concurrency,
      maxSteps,
      ...connect,
      convention,
      signal: controller.signal,
      onResult: async (result) => {
        await Deno.writeTextFile(out, JSON.stringify(result) + "\n", {
          append: true,
        });
        show(result);
      },
    });
    const after = await balanceMicros(gatewayUrl, key);
    console.log(summaryTable(results));
    const spent = results.reduce((sum, r) => sum + r.cost_usd, 0);
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
    return stopped ? 130 : 0;
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
    throw error;
  }
}

export { main };
