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
import { ConfigError } from "../gateway/config.ts";
import { type Demo, startDemo } from "../gateway/cli/demo.ts";
import type { Convention } from "./agents/agent.ts";
import {
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
} from "./tool_host.ts";
import { gatewayTransport } from "./agents/model.ts";
import { modelFacts, parseConvention } from "./agents/convention.ts";
import {
  parseCommandLine,
  parseCount,
  parseDisplay,
  parseEnv,
  parseJsonArgs,
  parsePositive,
  parseSeconds,
  parseThreshold,
  USAGE,
  UsageError,
} from "./cli/options.ts";
import { balanceMicros, checkGateway } from "./cli/gateway_check.ts";
import { endOfRunLines } from "./cli/summary.ts";
import {
  type ConnectOptions,
  DEFAULT_TOOL_TIMEOUT_MS,
} from "./environments/contract.ts";
import { Environment } from "./environments/environment.ts";
import { EnvironmentError, parseTarget } from "./environments/target.ts";
import { dockerTarget } from "./cli/docker_options.ts";
import { Recorder } from "./record/recorder.ts";
import { Replayer } from "./record/replay.ts";
import { writeReport } from "./report/report.ts";
import { imagesDirFor, storeImages } from "./report/images.ts";
import { concurrencyRefusal, runEval } from "./run/runner.ts";
import { scoredReward, summaryTable } from "./run/stats.ts";
import { type EvalTask, parseTasks, runIdentity } from "./run/tasks.ts";
import { createResultsFile, latestPerRun } from "./run/results_file.ts";
import { progress } from "./cli/progress.ts";
import { refuseOtherRuns, resumeFile } from "./cli/resume.ts";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
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
  const target = dockerTarget(positionals[0], positionals.slice(1), values) ??
    parseTarget(positionals[0], positionals.slice(1));
  if (values.record && values.replay) {
    throw new UsageError("--record and --replay cannot be used together");
  }
  const replay = values.replay === undefined
    ? undefined
    : await Replayer.open(values.replay).catch((error) => {
      throw new UsageError(`--replay: ${error.message}`);
    });
  const repeat = parsePositive(values.repeat, "repeat", replay?.repeat ?? 1);
  const concurrency = parsePositive(values.concurrency, "concurrency", 1);
  const maxSteps = parsePositive(values["max-steps"], "max-steps", 10);
  const retries = parseCount(values.retries, "retries", 0);
  const timeoutMs = parseSeconds(values.timeout, "timeout");
  const passThreshold = parseThreshold(values["pass-threshold"]);
  if (values.resume && values.out && values.out !== values.resume) {
    throw new UsageError(
      "--resume adds to its own file: leave out --out (or give the same file)",
    );
  }
  // Said before anything starts; the file is still created exclusively later.
  if (values.out && !values.resume && await exists(values.out)) {
    throw new UsageError(
      `${values.out} exists: --resume ${values.out} adds to it; --out takes a new file`,
    );
  }
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
    toolTimeoutMs: parsePositive(
      values["tool-timeout"],
      "tool-timeout",
      DEFAULT_TOOL_TIMEOUT_MS / 1000,
    ) * 1000,
    maxToolResultBytes: parsePositive(
      values["max-tool-result-bytes"],
      "max-tool-result-bytes",
      DEFAULT_MAX_TOOL_RESULT_BYTES,
    ),
    maxToolResultImages: parsePositive(
      values["max-tool-result-images"],
      "max-tool-result-images",
      DEFAULT_MAX_TOOL_RESULT_IMAGES,
    ),
  };
  if (!("command" in target) && !("runtime" in target) && values.env?.length) {
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
  const resumed = values.resume ? await resumeFile(values.resume) : undefined;
  const earlier = resumed?.lines ?? [];

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
  refuseOtherRuns(earlier, {
    file: values.resume,
    planned,
    model: values.model ?? replay?.index.model ?? "gpt-4o-mini",
    environment: probe.name,
  });

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
    // A replay drives the wire the recording was made with.
    const facts = replay
      ? { ...modelFacts(replay.index), convention: replay.index.convention }
      : await checkGateway(gatewayUrl, key!, model);
    convention ??= facts.convention;
    const out = values.resume ??
      await createResultsFile(values.out).catch((error) => {
        throw error instanceof Deno.errors.AlreadyExists
          ? new UsageError(error.message)
          : error;
      });
    const recorder = values.record === undefined
      ? undefined
      : await Recorder.create(values.record).catch((error) => {
        throw new UsageError(`--record: ${error.message}`);
      });
    const transport = replay?.transport ??
      recorder?.wrap(gatewayTransport({ gatewayUrl, key: key! }));

    // Resuming keeps the scored runs (each once) and runs the rest again,
    // appending: a line once written is never rewritten.
    const latest = latestPerRun(earlier);
    const kept = new Map(
      latest.filter((r) => scoredReward(r) !== null).map((
        r,
      ) => [runIdentity(r), r]),
    );
    // A line torn by a kill is ended, so the next one starts on its own.
    if (resumed?.endsTorn) {
      await Deno.writeTextFile(out, "\n", { append: true });
    }

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
      // The runs not scored are run again; their cost goes into the new result.
      completed: latest,
      endpoint: { gatewayUrl, key: key!, model, transport },
      concurrency,
      maxSteps,
      retries,
      timeoutMs,
      ...connect,
      convention,
      facts,
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
    await recorder?.finish(model, convention, results, facts);
    console.log(summaryTable(results, passThreshold));
    for (
      const line of endOfRunLines(results, {
        kept,
        earlier: latest,
        out,
        before,
        after,
        recordedIn: recorder?.dir,
        replayedFrom: replay?.dir,
      })
    ) console.log(line);
    const failed = results.filter((r) => r.error);
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
