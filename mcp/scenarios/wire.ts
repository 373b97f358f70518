/**
 * How scenarios reach the wire: one prompt and one resource per scenario,
 * named `{env}:{scenario}`, and the `_hud_submit` tool they share, all
 * registered on the server through the SDK's own `register*` methods.
 *
 * @module
 */
import { z } from "zod";
import {
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from "../_sdk.ts";
import { harnessAllowed } from "../harness.ts";
import {
  coerceArguments,
  normalizeAnswer,
  promptMessages,
  type ScenarioFunction,
  type ScenarioOptions,
  scenarioResult,
  URI_SCHEME,
} from "./scenario.ts";
import { runKey, RunTable } from "./runs.ts";
import type { RunToolFilters } from "./run_tools.ts";
import { type Shape, toolExtra } from "../primitives/tool.ts";

/** The tool agents do not see that hands a run its answer. */
export const SUBMIT_TOOL = "_hud_submit";

type Register = (
  name: string,
  config: Record<string, unknown>,
  cb: (...args: never[]) => unknown,
) => unknown;

/** The scenarios of one server and their runs. */
export class Scenarios {
  readonly #server: McpServer;
  readonly #env: string;
  readonly #harnessToken: string | undefined;
  readonly #filters: RunToolFilters;
  readonly #runs: RunTable;
  readonly #names = new Set<string>();

  /**
   * Creates the registry and registers `_hud_submit`.
   *
   * @param server The server to register on.
   * @param env The server's name: the `{env}` of the wire names.
   * @param harnessToken When set, prompts, submit and evaluation need it in `_meta.harness_token`.
   * @param filters Where each live run's tool filters are kept.
   */
  constructor(
    server: McpServer,
    env: string,
    harnessToken: string | undefined,
    filters: RunToolFilters,
  ) {
    if (!URI_SCHEME.test(env)) {
      throw new TypeError(
        `Cannot add scenarios to server "${env}": its name is the scheme of the scenario resources ("${env}:<scenario>"), so it may hold only letters, digits, "+", "-" and "." and start with a letter`,
      );
    }
    this.#server = server;
    this.#env = env;
    this.#harnessToken = harnessToken;
    this.#filters = filters;
    this.#runs = new RunTable(undefined, undefined, (key) => {
      // The scenario's name holds no NUL; a run id may.
      const cut = key.lastIndexOf("\u0000");
      filters.delete(key.slice(0, cut), key.slice(cut + 1));
    });
    (server.registerTool as Register).call(
      server,
      SUBMIT_TOOL,
      {
        description:
          "Submit the final answer of a scenario run (for the harness, not the agent)",
        inputSchema: {
          scenario: z.string().describe("The scenario's name"),
          answer: z.union([
            z.string(),
            z.object({
              content: z.union([z.string(), z.array(z.any())]),
              citations: z.array(z.any()).optional(),
            }),
          ]).describe("The agent's answer"),
        },
      },
      (args: { scenario: string; answer: unknown }, ctx: ServerContext) =>
        this.#submit(args.scenario, args.answer, ctx),
    );
  }

  /** Runs in progress (for monitoring and tests). */
  get runs(): number {
    return this.#runs.size;
  }

  /**
   * Registers a scenario's prompt and resource.
   *
   * @param options Name, description, input shape, tool filters.
   * @param fn The scenario generator.
   */
  add<S extends Shape>(options: ScenarioOptions<S>, fn: ScenarioFunction<S>) {
    const { name } = options;
    if (!name || /[\s:]/.test(name)) {
      throw new TypeError(
        `Invalid scenario name "${name}": use a non-empty name without spaces or ":"`,
      );
    }
    if (this.#names.has(name)) {
      throw new Error(`Scenario "${name}" is already registered`);
    }
    this.#names.add(name);
    const wireName = `${this.#env}:${name}`;
    const shape: Shape = options.input ?? {};
    // Listed as strings (what prompt arguments are); coerced on the way in.
    const listed = Object.fromEntries(
      Object.entries(shape).map(([key, field]) => {
        const text = z.string().describe(
          (field as z.ZodType).description ?? key,
        );
        const optional = z.safeParse(field, undefined).success;
        return [key, optional ? text.optional() : text];
      }),
    );
    (this.#server.registerPrompt as Register).call(
      this.#server,
      wireName,
      {
        description: options.description,
        argsSchema: listed,
      },
      (args: Record<string, string>, ctx: ServerContext) =>
        this.#setup(name, shape, options, fn as ScenarioFunction, args, ctx),
    );
    this.#server.registerResource(wireName, wireName, {
      description: `Evaluates the current run of scenario "${name}"`,
      mimeType: "application/json",
    }, (uri, ctx) => this.#evaluate(name, uri, ctx));
  }

  async #setup(
    name: string,
    shape: Shape,
    options: ScenarioOptions,
    fn: ScenarioFunction,
    args: Record<string, string>,
    ctx: ServerContext,
  ) {
    const extra = toolExtra(ctx);
    // Getting a scenario's prompt starts a run (and replaces the run the
    // same key had): an agent, or any client, must not set up a run of its
    // own choosing, nor evict the harness's runs by starting many.
    if (!harnessAllowed(this.#harnessToken, extra)) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Scenario prompts answer only the evaluation harness: send _meta.harness_token`,
      );
    }
    const coerced = coerceArguments(shape, args);
    if (!coerced.ok) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid arguments for scenario ${name}: ${coerced.error}`,
      );
    }
    const key = `${runKey(extra)}\u0000${name}`;
    const generator = fn(coerced.value as never, { extra, run: runKey(extra) });
    let first;
    try {
      first = await generator.next();
    } catch (error) {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Setup of scenario ${name} failed: ${messageOf(error)}`,
      );
    }
    if (first.done) {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Scenario ${name} ended before yielding its prompt`,
      );
    }
    const messages = promptMessages(first.value);
    this.#runs.start(key, { generator, touched: Date.now() });
    this.#filters.set(runKey(extra), name, options);
    const meta: Record<string, unknown> = {};
    if (options.excludeTools) meta.exclude_tools = options.excludeTools;
    if (options.allowedTools) meta.allowed_tools = options.allowedTools;
    if (options.computerEnvironment) {
      meta.computer_environment = options.computerEnvironment;
    }
    if (options.network) meta.network = options.network;
    return {
      description: options.description,
      messages,
      ...(Object.keys(meta).length > 0 && { _meta: meta }),
    };
  }

  #submit(scenario: string, answer: unknown, ctx: ServerContext) {
    const extra = toolExtra(ctx);
    if (!harnessAllowed(this.#harnessToken, extra)) {
      return errorResult(
        `${SUBMIT_TOOL} answers only the evaluation harness: send _meta.harness_token`,
      );
    }
    const run = this.#runs.get(`${runKey(extra)}\u0000${scenario}`);
    if (!run) {
      return errorResult(
        `No run of scenario "${scenario}" to submit to: get the prompt "${this.#env}:${scenario}" first`,
      );
    }
    run.answer = normalizeAnswer(answer);
    return { content: [{ type: "text", text: "Answer submitted" }] };
  }

  async #evaluate(name: string, uri: URL, ctx: ServerContext) {
    const extra = toolExtra(ctx);
    if (!harnessAllowed(this.#harnessToken, extra)) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Scenario resources answer only the evaluation harness: send _meta.harness_token`,
      );
    }
    // One evaluation per run, whatever it returns: the run leaves the table.
    const run = this.#runs.take(`${runKey(extra)}\u0000${name}`);
    if (!run) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `No run of scenario "${name}" to evaluate: get the prompt "${this.#env}:${name}" first`,
      );
    }
    let result;
    try {
      const next = await run.generator.next(run.answer ?? "");
      result = scenarioResult(next.value);
    } catch (error) {
      result = {
        reward: 0,
        done: true,
        isError: true,
        content: messageOf(error),
      };
    } finally {
      run.generator.return(undefined).catch(() => {});
    }
    return {
      contents: [{
        uri: uri.href,
        mimeType: "application/json",
        text: JSON.stringify(result),
      }],
    };
  }
}

function errorResult(text: string) {
  return { content: [{ type: "text", text }], isError: true };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
