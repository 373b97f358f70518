/**
 * The model side of an agent loop: the conventions the runner speaks, the
 * gateway endpoint, and the transport a model call goes through (the
 * gateway over HTTP, or a recording when replaying), with the cost header
 * read as µUSD.
 *
 * @module
 */
import { readAtMost } from "../_bounded_http.ts";

/** A JSON object as the providers send it. */
export type JsonObject = Record<string, unknown>;

/** The wire conventions the runner speaks, named after the gateway's routes. */
export type Convention = "chat" | "messages" | "responses" | "gemini";

/**
 * Every convention, in the order `--convention` lists them.
 *
 * @example
 * ```ts
 * import { CONVENTIONS } from "./model.ts";
 *
 * CONVENTIONS.join(", "); // "chat, messages, responses, gemini"
 * ```
 */
export const CONVENTIONS: readonly Convention[] = [
  "chat",
  "messages",
  "responses",
  "gemini",
];

/**
 * How computer use is reached on a model, as the gateway's `GET /v1/models`
 * lists it (`computer_use`): the provider's tool type exactly as sent, the
 * `anthropic-beta` value it needs, and for Gemini the environment.
 */
export interface ComputerUseWire {
  /** The tool type, e.g. `computer_toolset_20260801`, `computer`, `computer_use`. */
  tool: string;
  /** The `anthropic-beta` header value the tool needs, when it needs one. */
  beta?: string;
  /** The default environment (Gemini: `ENVIRONMENT_BROWSER`, …). */
  environment?: string;
  /** Every environment the model documents (Gemini). */
  environments?: string[];
}

/**
 * What a model refuses, as `GET /v1/models` lists it (`features`); an
 * absent field means the model accepts it.
 */
export interface ModelFeatures {
  /** `false`: the model refuses `thinking: {type: "disabled"}`. */
  disabledThinking?: boolean;
  /** `false`: the model refuses a forced `tool_choice` (any, or a named tool). */
  forcedToolChoice?: boolean;
  /** `true`: text between tool calls arrives in thinking blocks. */
  thinkingBetweenTools?: boolean;
}

/**
 * What the runner reads about a model from the gateway: the convention its
 * routes call for, and how its computer use is reached.
 */
export interface ModelFacts {
  /** The wire convention. */
  convention: Convention;
  /** How computer use is reached, for a model that has it. */
  computerUse?: ComputerUseWire;
  /** What the model refuses. */
  features?: ModelFeatures;
}

/** Where the model is. */
export interface ModelEndpoint {
  /** Base URL of the gateway, e.g. `http://localhost:8080` (the route's path is added). */
  gatewayUrl: string;
  /** The caller key. */
  key: string;
  /** The model id. */
  model: string;
  /**
   * How model calls travel (default {@linkcode gatewayTransport} of this
   * endpoint): the one seam every loop's model calls pass, which recording
   * and replay wrap (see `eval/record/recorder.ts`).
   */
  transport?: ModelTransport;
}

/** A model call as a loop sends it, before it meets the network. */
export interface ModelRequest {
  /** The route's path under the gateway, e.g. `/v1/messages`. */
  path: string;
  /** Headers the convention needs (`trace-id`, `anthropic-beta`); never the key. */
  headers: Record<string, string>;
  /** The request body. */
  body: JsonObject;
  /** The run's `trace-id`. */
  traceId: string;
  /** The model call's number in the run, from 1. */
  step: number;
  /**
   * The planned run the call belongs to (task position and repetition),
   * when the runner says: a replay plays that run's own recording.
   */
  run?: RunPlace;
  /** Stops the call. */
  signal?: AbortSignal;
}

/** Where a run is in the eval: its task's position and its repetition. */
export interface RunPlace {
  /** The task's position, from 0. */
  task: number;
  /** The repetition, from 0. */
  repeat: number;
}

/** A model call's answer, read whole. */
export interface ModelResponse {
  /** The HTTP status. */
  status: number;
  /** The status text. */
  statusText: string;
  /** Headers, names lower case (`x-gateway-cost` is read from here). */
  headers: Record<string, string>;
  /** The body's text. */
  body: string;
  /** Set when a recording answered, not the gateway. */
  replayed?: boolean;
}

/** Sends one model call and reads its answer whole. */
export type ModelTransport = (request: ModelRequest) => Promise<ModelResponse>;

/**
 * One model answer read at most, bytes: far above any answer a model
 * writes (an 8,000-call turn is about 1 MB), so a hostile gateway or model
 * cannot make the runner buffer without bound.
 */
export const MAX_MODEL_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * The transport that calls the gateway over HTTP with the endpoint's key.
 *
 * @example
 * ```ts ignore
 * import { gatewayTransport } from "./model.ts";
 * const send = gatewayTransport({ gatewayUrl: "http://localhost:8080", key: "gk_…", model: "gpt-4o-mini" });
 * ```
 *
 * @param endpoint The gateway and key.
 * @returns The transport.
 */
export function gatewayTransport(
  endpoint: Pick<ModelEndpoint, "gatewayUrl" | "key">,
): ModelTransport {
  const base = endpoint.gatewayUrl.replace(/\/$/, "");
  return async (request) => {
    const response = await fetch(`${base}${request.path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${endpoint.key}`,
        "content-type": "application/json",
        ...request.headers,
      },
      body: JSON.stringify(request.body),
      signal: request.signal,
    });
    const read = response.body
      ? await readAtMost(response.body, MAX_MODEL_ANSWER_BYTES)
      : { bytes: new Uint8Array(0), size: 0, over: false };
    if (read.over) {
      throw new RangeError(
        `The model's answer was over ${MAX_MODEL_ANSWER_BYTES} bytes: the runner read no more of it`,
      );
    }
    return {
      status: response.status,
      statusText: response.statusText,
      headers: Object.fromEntries(response.headers),
      body: new TextDecoder().decode(read.bytes),
    };
  };
}

/**
 * A USD amount as the gateway prints it, in micro-USD.
 *
 * @example
 * ```ts
 * import { usdToMicros } from "./model.ts";
 *
 * usdToMicros("$0.000125"); // 125
 * ```
 *
 * @param text `$0.000125`, `0.5`, or nothing.
 * @returns The amount in micro-USD; 0 for nothing or a non-number.
 */
export function usdToMicros(text: string | null): number {
  if (!text) return 0;
  const value = Number(text.replace(/^\$/, ""));
  return Number.isFinite(value) ? Math.round(value * 1_000_000) : 0;
}
