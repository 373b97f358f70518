/**
 * A provider simulator: one loopback HTTP server that speaks the wire formats
 * of every provider in the gateway's registry
 * (`upstream/providers/mod.ts`), deterministically and without network, so
 * the gateway can be demonstrated, tested and benchmarked against it.
 *
 * Each provider is served under `/<name>` followed by the path of its
 * default base URL (so each base URL keeps the official SDK's own
 * convention), with the endpoints of the API family its `wire` names:
 *
 * | Wire | Providers | Base URL | Endpoints |
 * |---|---|---|---|
 * | openai | openai, xai, openrouter | `${baseUrl}/openai/v1`, `/xai/v1`, `/openrouter/api/v1` | `POST /chat/completions`, `POST /responses`, `GET /responses/{id}` |
 * | anthropic | anthropic | `${baseUrl}/anthropic` | `POST /v1/messages`, `POST /v1/messages/count_tokens` |
 * | gemini | gemini | `${baseUrl}/gemini` | `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`, and the OpenAI-compatible `POST /v1beta/openai/chat/completions` |
 *
 * Replies are `Echo: <last user text>` unless configured; tool calls follow
 * the rules in `reply.ts` (a forcing `tool_choice`, `call tool <name>` in the
 * last user message, or tools the first user message names in backticks).
 * Each request's behaviour (latency, error status, hang, garbage, cut or slow
 * stream, reply, usage) merges the default, the presented key's behaviour and
 * the first matching scripted step.
 *
 * - **Usage**: one token per four characters of text; each image as its
 *   provider bills it from the pixel size its PNG/JPEG/GIF/WebP header gives
 *   (Anthropic ≈ w·h/750 within 1568 px and ~1600 tokens, OpenAI 85 + 170
 *   per 512-px tile, Gemini 258 per 768-px tile; 258 when the size cannot be
 *   read; see `image.ts`); inline data of a text type as text.
 * - **Structured output**: chat `response_format` (`json_schema`,
 *   `json_object`), Responses `text.format`, Anthropic `output_config.format`
 *   (and the beta `output_format`), Gemini `responseMimeType` with
 *   `responseSchema` / `responseJsonSchema` (and `text/x.enum`): the reply is
 *   JSON generated from the schema that validates against it, so the SDKs'
 *   `.parse()` helpers work offline (see `schema.ts`).
 * - **Computer use**: with a computer tool declared (Claude's
 *   `computer_toolset_20260801` or a `computer_*` tool, Responses `computer`
 *   or `computer_use_preview`, Gemini `computerUse`, a chat function named
 *   `computer`) and instructions in the first user message, such as
 *   `The screen is 1280x800. Click the text box at (412, 300), type "hello",
 *   then press Enter.`, the model is a deterministic agent: a screenshot
 *   first (not on Gemini), then the actions in each provider's own shapes
 *   (one per turn, or all in one turn where the wire batches: Claude's
 *   toolset members, the GA `computer` tool's `actions`), streamed and not,
 *   then a text that starts with "Done". `[confirm]` adds a safety check the
 *   next request must acknowledge (Responses, Gemini). See `computer_use.ts`
 *   for the grammar.
 * - **Refusals**: what the model's catalog facts say the real API refuses
 *   (another computer tool version, a missing `anthropic-beta`, disabled
 *   thinking, forced tool choice, a Gemini environment) is answered with the
 *   provider's 400 and wording (`anthropic_rules.ts`, `openai_rules.ts`,
 *   `gemini_computer.ts`); a model the catalog does not know is served
 *   leniently. `options.models` replaces the catalog.
 * - **Stored responses**: Responses are stored per API key (each key its own
 *   organization) unless `store: false`, and `previous_response_id`
 *   continues them (`response_store.ts`).
 *
 * @example
 * ```ts
 * import OpenAI from "openai";
 * import { startSimulator } from "./mod.ts";
 *
 * await using sim = await startSimulator();
 * const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-test" });
 * const completion = await client.chat.completions.create({
 *   model: "gpt-4o",
 *   messages: [{ role: "user", content: "hi" }],
 * });
 * completion.choices[0].message.content; // "Echo: hi"
 * sim.enqueue({ match: { provider: "openai" }, behaviour: { status: 429, retryAfter: 2 } });
 *
 * // A computer-use turn: the agent asks for a screenshot first.
 * const turn = await client.responses.create({
 *   model: "computer-use-preview",
 *   tools: [{ type: "computer_use_preview", display_width: 1280, display_height: 800, environment: "browser" }],
 *   input: 'Click the text box at (412, 300), type "hello", then press Enter.',
 *   truncation: "auto",
 * });
 * turn.output[0]; // { type: "computer_call", action: { type: "screenshot" }, ... }
 * ```
 *
 * @module
 */

import { Hono } from "hono";
import {
  PROVIDER_NAMES,
  type ProviderName,
  PROVIDERS,
} from "../upstream/providers/mod.ts";
import type { UpstreamWire } from "../upstream/providers/provider.ts";
import { anthropicWire, messages } from "./anthropic.ts";
import { checkAnthropicRules } from "./anthropic_rules.ts";
import {
  type Behaviour,
  BehaviourBook,
  type ScriptedStep,
} from "./behaviour.ts";
import { answerCountTokens } from "./count_tokens.ts";
import {
  answerRequest,
  type Dialect,
  notFound,
  type SimulatedRequest,
  type SimulatorState,
  type Wire,
} from "./request_flow.ts";
import { ConnectionCutError } from "./answers.ts";
import { geminiWire, generateContent } from "./gemini.ts";
import { openaiWire } from "./openai.ts";
import { chatCompletions, geminiChatCompletions } from "./openai_chat.ts";
import { responses } from "./openai_responses.ts";
import { retrieveResponse } from "./openai_responses_get.ts";
import type { SimulatedModel } from "./model_facts.ts";
import { ResponseStore, type ResponseStoreOptions } from "./response_store.ts";
import { ConnectionWatch } from "./connection_watch.ts";

export type {
  Behaviour,
  BehaviourMatch,
  ScriptedStep,
  UsageOverride,
} from "./behaviour.ts";
export type { SimulatedRequest } from "./request_flow.ts";
export type { SimulatedModel } from "./model_facts.ts";
export type { ComputerUse, ModelFeatures } from "../state/model_facts.ts";
export type { ResponseStoreOptions } from "./response_store.ts";
// The providers it serves are the gateway's registered ones.
export {
  type ProviderName,
  REGISTERED_PROVIDERS,
} from "../upstream/providers/mod.ts";

/** Options of {@linkcode startSimulator}. */
export interface SimulatorOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  hostname?: string;
  /** Behaviour of every request (default: answer at once). */
  behaviour?: Behaviour;
  /** Behaviours per provider key. */
  keys?: Record<string, Behaviour>;
  /** When set, any other provider key is refused with the provider's 401. */
  validKeys?: Iterable<string>;
  /** Most request records kept; past it the oldest half is dropped (default 10 000). */
  maxRecords?: number;
  /**
   * The models whose facts decide what is refused (tool versions, beta
   * headers, thinking, forced tool choice), found by the provider's model
   * id; default: the gateway's catalog (`gateway/catalog.json`). A model
   * not listed is served leniently.
   */
  models?: readonly SimulatedModel[];
  /** Limits of the Responses API's stored responses (see `response_store.ts`). */
  responseStore?: ResponseStoreOptions;
}

/** A running simulator. */
export interface Simulator extends AsyncDisposable {
  /** The port it listens on. */
  readonly port: number;
  /** `http://host:port`, without a trailing slash. */
  readonly baseUrl: string;
  /** Each provider's base URL, in its official SDK's convention. */
  readonly baseUrls: Readonly<Record<ProviderName, string>>;
  /** Requests received, oldest first (the same array across {@linkcode Simulator.clear}). */
  readonly requests: SimulatedRequest[];
  /** How many requests the client aborted before their response ended. */
  readonly aborted: number;
  /** How many scripted requests are still queued. */
  readonly pending: number;
  /**
   * Queues a behaviour for the next matching request(s).
   *
   * @param step The behaviour, what it matches and how many times.
   */
  enqueue(step: ScriptedStep): void;
  /**
   * Sets (or with `undefined` removes) the behaviour of one provider key.
   *
   * @param key The provider key.
   * @param behaviour Its behaviour.
   */
  setKeyBehaviour(key: string, behaviour: Behaviour | undefined): void;
  /**
   * Replaces the default behaviour.
   *
   * @param behaviour The new default.
   */
  setDefaultBehaviour(behaviour: Behaviour): void;
  /** Forgets recorded requests, the abort count and the scripted queue. */
  clear(): void;
  /**
   * Resolves once `predicate` holds, re-checked whenever a request is recorded, answered or aborted.
   *
   * @param predicate The condition, e.g. `() => sim.aborted === 1`.
   * @param timeoutMs How long to wait before rejecting (default 2000).
   * @returns A promise that resolves when the condition holds.
   */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /**
   * The gateway's environment for using this simulator: `P_BASE_URL` for each provider.
   *
   * @returns Variable names to values.
   */
  env(): Record<string, string>;
  /**
   * Stops the server: hanging requests and open streams are cut, then the listener closes.
   *
   * @returns A promise that resolves once the server has shut down.
   */
  close(): Promise<void>;
}

/**
 * Where the simulator serves a provider: `/<name>` and the path of its
 * default base URL (`/openai/v1`, `/anthropic`, `/openrouter/api/v1`).
 */
function mountPath(provider: ProviderName): string {
  const { pathname } = new URL(PROVIDERS[provider].defaultBaseUrl);
  return `/${provider}${pathname.replace(/\/+$/, "")}`;
}

const MOUNT_PATHS: Readonly<Record<ProviderName, string>> = Object.fromEntries(
  PROVIDER_NAMES.map((provider) => [provider, mountPath(provider)]),
) as Record<ProviderName, string>;

/** Each API family's key, error and stream conventions. */
const WIRES: Readonly<Record<UpstreamWire, Wire>> = {
  openai: openaiWire,
  anthropic: anthropicWire,
  gemini: geminiWire,
};

/** Deliberate cuts are the behaviour asked for, not failures worth a log line. */
function quietOnCut(error: unknown): Response {
  if (!(error instanceof ConnectionCutError)) console.error(error);
  return new Response("Internal Server Error", { status: 500 });
}

function buildApp(state: SimulatorState): Hono {
  const app = new Hono();
  const serve = (path: string, provider: ProviderName, dialect: Dialect) => {
    // Hono hands Deno.serve's connection info over as the env.
    app.post(path, (c) =>
      answerRequest(
        state,
        c.req.raw,
        provider,
        dialect,
        (c.env as Deno.ServeHandlerInfo | undefined)?.remoteAddr,
      ));
  };
  // Each family's endpoints, mounted at a provider's path.
  const mount: Record<
    UpstreamWire,
    (path: string, provider: ProviderName) => void
  > = {
    openai(path, provider) {
      serve(`${path}/chat/completions`, provider, chatCompletions);
      serve(`${path}/responses`, provider, responses);
      app.get(
        `${path}/responses/:id`,
        (c) => retrieveResponse(state, c.req.raw, provider, c.req.param("id")),
      );
    },
    anthropic(path, provider) {
      serve(`${path}/v1/messages`, provider, messages);
      app.post(
        `${path}/v1/messages/count_tokens`,
        (c) =>
          answerCountTokens(
            state,
            c.req.raw,
            provider,
            anthropicWire,
            (tokens) => ({ input_tokens: tokens }),
            // The API refuses on count_tokens what it refuses on messages.
            (body, context) =>
              checkAnthropicRules(
                body,
                context.headers,
                typeof body.model === "string"
                  ? context.model(body.model)
                  : undefined,
              ),
          ),
      );
    },
    gemini(path, provider) {
      app.post(`${path}/:version/models/*`, async (c, next) => {
        if (!c.req.path.endsWith(":countTokens")) return await next();
        return answerCountTokens(
          state,
          c.req.raw,
          provider,
          geminiWire,
          (tokens) => ({ totalTokens: tokens }),
        );
      });
      serve(
        `${path}/:version/openai/chat/completions`,
        provider,
        geminiChatCompletions,
      );
      serve(`${path}/:version/models/*`, provider, generateContent);
    },
  };
  for (const provider of PROVIDER_NAMES) {
    mount[PROVIDERS[provider].wire](MOUNT_PATHS[provider], provider);
  }
  app.get("/health", (c) => c.json({ ok: true }));
  for (const provider of PROVIDER_NAMES) {
    const wire = WIRES[PROVIDERS[provider].wire];
    app.all(
      `/${provider}/*`,
      (c) => notFound(state, c.req.raw, provider, wire),
    );
  }
  return app;
}

/**
 * Starts a simulator on loopback.
 *
 * @example
 * ```ts
 * import { startSimulator } from "./mod.ts";
 *
 * const sim = await startSimulator({ keys: { "sk-bad": { status: 401 } } });
 * console.log(sim.baseUrls.anthropic); // http://127.0.0.1:<port>/anthropic
 * await sim.close();
 * ```
 *
 * @param options Port, behaviours and limits.
 * @returns The running simulator.
 */
export function startSimulator(
  options: SimulatorOptions = {},
): Promise<Simulator> {
  const closing = new AbortController();
  const waiters = new Set<() => void>();
  const state: SimulatorState = {
    book: new BehaviourBook(options.behaviour, options.keys),
    requests: [],
    maxRecords: options.maxRecords ?? 10_000,
    validKeys: options.validKeys ? new Set(options.validKeys) : undefined,
    closing: closing.signal,
    aborted: 0,
    nextId: 1,
    models: options.models,
    responses: new ResponseStore(options.responseStore),
    connections: new ConnectionWatch(),
    changed() {
      for (const check of waiters) check();
    },
  };
  const app = buildApp(state);
  const hostname = options.hostname ?? "127.0.0.1";
  return new Promise((resolve) => {
    const simulator = (port: number): Simulator => {
      const baseUrl = `http://${
        hostname.includes(":") ? `[${hostname}]` : hostname
      }:${port}`;
      const baseUrls = Object.fromEntries(
        Object.entries(MOUNT_PATHS).map((
          [provider, path],
        ) => [provider, `${baseUrl}${path}`]),
      ) as Record<ProviderName, string>;
      let closed: Promise<void> | undefined;
      const close = (): Promise<void> => {
        closed ??= (async () => {
          closing.abort();
          state.changed();
          await server.shutdown();
        })();
        return closed;
      };
      return {
        port,
        baseUrl,
        baseUrls,
        get requests() {
          return state.requests;
        },
        get aborted() {
          return state.aborted;
        },
        get pending() {
          return state.book.pending;
        },
        enqueue: (step) => state.book.enqueue(step),
        setKeyBehaviour: (key, behaviour) =>
          state.book.setForKey(key, behaviour),
        setDefaultBehaviour: (behaviour) => state.book.setDefault(behaviour),
        clear() {
          state.requests.length = 0;
          state.aborted = 0;
          state.book.clearQueue();
        },
        waitFor(predicate, timeoutMs = 2000) {
          if (predicate()) return Promise.resolve();
          return new Promise((resolveWait, rejectWait) => {
            const check = () => {
              if (closing.signal.aborted) {
                done();
                rejectWait(new Error("Simulator closed while waiting"));
              } else if (predicate()) {
                done();
                resolveWait();
              }
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              rejectWait(
                new Error(
                  `Timed out after "${timeoutMs}" ms waiting for the simulator`,
                ),
              );
            }, timeoutMs);
            const done = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
          });
        },
        env() {
          return Object.fromEntries(
            Object.entries(baseUrls).map((
              [provider, url],
            ) => [`${provider.toUpperCase()}_BASE_URL`, url]),
          );
        },
        close,
        [Symbol.asyncDispose]: close,
      };
    };
    // Declared after the factory: onListen may run inside Deno.serve, and only close() reads it.
    const server: Deno.HttpServer = Deno.serve({
      port: options.port ?? 0,
      hostname,
      onListen: ({ port }) => resolve(simulator(port)),
      onError: quietOnCut,
    }, app.fetch);
  });
}
