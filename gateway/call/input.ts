/**
 * The first steps of a call, before any money moves: the body read against
 * its route's schema, the model and its fallbacks resolved, and the
 * provider's exchange built.
 *
 * @module
 */
import { z } from "zod";
import { firstIssue } from "../_zod.ts";
import type { CallDeps, CallRequest } from "./deps.ts";
import { GatewayError } from "../errors.ts";
import { estimateInputTokens } from "./estimate.ts";
import type {
  CallInput,
  Exchange,
  Provider,
} from "../upstream/providers/provider.ts";
import { parseJson } from "../upstream/providers/provider.ts";
import { lifecycleHeaders, modelStatus } from "../state/catalog.ts";
import {
  chatRequestSchema,
  TranslationError,
} from "../upstream/translate/chat_types.ts";
import type { CatalogEntry } from "../state/catalog.ts";
import type { RouteName } from "../conventions.ts";

const positiveInt = z.number().int().positive();
// One schema per route; the chat route's is the translators' own.
const routeSchemas = {
  chat: chatRequestSchema,
  messages: z.looseObject({
    model: z.string().min(1),
    messages: z.array(z.looseObject({ role: z.string() })).min(1),
    max_tokens: positiveInt,
    stream: z.boolean().nullish(),
  }),
  responses: z.looseObject({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(z.unknown())]).optional(),
    stream: z.boolean().nullish(),
    max_output_tokens: positiveInt.nullish(),
  }),
  gemini: z.looseObject({
    contents: z.array(z.looseObject({})).min(1),
    generationConfig: z.looseObject({
      maxOutputTokens: positiveInt.nullish(),
      // Gemini answers 1 to 8 candidates, each billed.
      candidateCount: positiveInt.max(8).nullish(),
    }).nullish(),
  }),
};

/** A call's body, read. */
export interface ParsedCall {
  /** The model id asked for (Gemini's from the path). */
  model: string;
  /** The validated body. */
  body: Record<string, unknown>;
  /** Whether the caller asked for a stream. */
  stream: boolean;
  /** The caller's output limit, if it set one. */
  maxOutputTokens?: number;
  /**
   * How many answers the call asks for (chat `n`, Gemini `candidateCount`),
   * each up to the output limit and each billed: the hold covers them all.
   */
  choices: number;
  /**
   * Output tokens billed beyond the output limit: a chat `prediction`
   * (OpenAI bills the predicted tokens it rejects as output, whatever
   * `max_tokens` says). 0 for none.
   */
  predictedTokens: number;
}

/**
 * A request body that must be one JSON object.
 *
 * @param text The body.
 * @returns The object.
 * @throws {GatewayError} A 400 for anything else.
 */
export function jsonObject(text: string): Record<string, unknown> {
  const json = parseJson(text);
  if (json === undefined) {
    throw new GatewayError(400, "Request body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new GatewayError(400, "Request body must be a JSON object");
  }
  return json as Record<string, unknown>;
}

/**
 * Reads a call's body: one JSON object, valid for its route's schema.
 *
 * @param request The call's request.
 * @param read Its body parsed already ({@linkcode jsonObject}), if it was.
 * @returns The model asked for, the body, whether it streams and its output limit.
 * @throws {GatewayError} A 400 naming the first invalid field.
 */
export function parseCall(
  request: CallRequest,
  read: Record<string, unknown> = jsonObject(request.bodyText),
): ParsedCall {
  const json = request.route === "gemini" ? geminiSpelling(read) : read;
  const parsed = routeSchemas[request.route].safeParse(json);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new GatewayError(400, `Invalid "${param || "body"}": ${message}`, {
      code: "invalid_request",
      param: param || null,
    });
  }
  const body = parsed.data as Record<string, unknown>;
  switch (request.route) {
    case "gemini": {
      const config = body.generationConfig as
        | { maxOutputTokens?: number; candidateCount?: number }
        | undefined;
      return {
        model: request.pathModel ?? "",
        body,
        stream: request.pathStream === true,
        maxOutputTokens: config?.maxOutputTokens ?? undefined,
        choices: config?.candidateCount ?? 1,
        predictedTokens: 0,
      };
    }
    case "chat":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        // A provider passed the body may honour either field: hold the larger.
        maxOutputTokens: largerLimit(
          body.max_completion_tokens as number | null | undefined,
          body.max_tokens as number | null | undefined,
        ),
        choices: (body.n as number | null | undefined) ?? 1,
        predictedTokens: body.prediction == null
          ? 0
          : estimateInputTokens(body.prediction),
      };
    case "messages":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        maxOutputTokens: body.max_tokens as number,
        choices: 1,
        predictedTokens: 0,
      };
    case "responses":
      return {
        model: body.model as string,
        body,
        stream: body.stream === true,
        maxOutputTokens: (body.max_output_tokens ?? undefined) as
          | number
          | undefined,
        choices: 1,
        predictedTokens: 0,
      };
  }
}

/**
 * A Gemini body with its generation config in one spelling. Google's JSON
 * reading accepts a proto field by its lowerCamel name or its own
 * (`generation_config.candidate_count`); the hold reads `candidateCount`,
 * so the snake_case spellings are renamed before anything reads them, and a
 * field given in both is refused rather than guessed.
 */
function geminiSpelling(
  body: Record<string, unknown>,
): Record<string, unknown> {
  const { generation_config: snake, ...rest } = body;
  if (snake === undefined) return renamedConfig(body);
  if (rest.generationConfig !== undefined) {
    throw bothSpellings("generationConfig", "generation_config");
  }
  return renamedConfig({ ...rest, generationConfig: snake });
}

/** The body with its `generationConfig` keys in lowerCamel (`max_output_tokens` → `maxOutputTokens`). */
function renamedConfig(
  body: Record<string, unknown>,
): Record<string, unknown> {
  const config = body.generationConfig;
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    return body;
  }
  const renamed = new Map<string, unknown>();
  for (const [key, value] of Object.entries(config)) {
    const camel = key.replace(/_([a-z])/g, (_, letter) => letter.toUpperCase());
    if (renamed.has(camel)) {
      throw bothSpellings(
        `generationConfig.${camel}`,
        `generationConfig.${key}`,
      );
    }
    renamed.set(camel, value);
  }
  return { ...body, generationConfig: Object.fromEntries(renamed) };
}

/** The 400 for a field a body names in two spellings. */
function bothSpellings(camel: string, snake: string): GatewayError {
  return new GatewayError(
    400,
    `Invalid "${snake}": the body also sets "${camel}"; send one spelling`,
    { code: "invalid_request", param: snake },
  );
}

/** The larger of two optional output limits; `undefined` when neither is set. */
function largerLimit(
  a: number | null | undefined,
  b: number | null | undefined,
): number | undefined {
  if (a == null) return b ?? undefined;
  if (b == null) return a;
  return Math.max(a, b);
}

/**
 * The catalog entry that serves a call to the model a caller asked for on
 * `route`. A retired model is refused with 410 naming its successor, or,
 * where the operator set `reroute`, is served by its successor (resolved the
 * same way, so a chain of retirements is followed), whose entry, and price,
 * the call then uses.
 *
 * @param deps The catalog lookups.
 * @param route The route.
 * @param id The model id.
 * @param now The moment the call is made, epoch ms.
 * @returns The entry.
 * @throws {GatewayError} 404 for an unknown model, 400 for one not on the
 * route, 410 for a retired model that is not rerouted.
 */
export function resolveModel(
  deps: Pick<CallDeps, "model" | "modelsOn">,
  route: RouteName,
  id: string,
  now: number = Date.now(),
): CatalogEntry {
  const requested = knownModel(deps, id);
  let entry = requested;
  const seen = new Set<string>();
  while (modelStatus(entry, now) === "retired") {
    seen.add(entry.id);
    const { retires, successor, reroute } = entry.lifecycle ?? {};
    const next = successor === undefined ? undefined : deps.model(successor);
    if (!reroute || !next || seen.has(next.id)) {
      throw retired(entry, retires ?? "", successor, next !== undefined);
    }
    entry = next;
  }
  if (!entry.routes.includes(route)) {
    const native = deps.modelsOn(route);
    // An alias names the same entry: only a reroute is worth saying.
    const asked = entry === requested
      ? ""
      : ` (the successor of retired "${id}")`;
    throw new GatewayError(
      400,
      `Model "${entry.id}"${asked} is not available on the ${route} route; it is available on: ${
        entry.routes.join(", ")
      }. The ${route} route serves ${
        native.length > 0 ? native.join(", ") : "no model"
      }${
        entry.routes.includes("chat")
          ? `; reach "${entry.id}" through POST /v1/chat/completions`
          : ""
      }`,
      { code: "model_not_on_route", param: "model" },
    );
  }
  return entry;
}

/** The entry of a model the catalog lists; 404 otherwise. */
function knownModel(
  deps: Pick<CallDeps, "model">,
  id: string,
): CatalogEntry {
  const entry = deps.model(id);
  if (!entry) {
    throw new GatewayError(
      404,
      `Model "${id}" does not exist; GET /models lists the models`,
      { code: "model_not_found", param: "model" },
    );
  }
  return entry;
}

/** The refusal of a call to a retired model: 410, naming what to call instead. */
function retired(
  entry: CatalogEntry,
  retires: string,
  successor: string | undefined,
  successorListed: boolean,
): GatewayError {
  const instead = successor === undefined
    ? "; GET /models lists the models still served"
    : successorListed
    ? `; use its successor "${successor}" instead`
    : `; its successor "${successor}" is not served here; GET /models lists the models`;
  return new GatewayError(
    410,
    `Model "${entry.id}" was retired on ${retires}${instead}`,
    { code: "model_retired", param: "model", headers: lifecycleHeaders(entry) },
  );
}

/**
 * The provider's upstream half of a call; a body the translation refuses is
 * the caller's 400.
 *
 * @param provider The provider serving the call.
 * @param call The call.
 * @returns The exchange.
 */
export function buildExchange(provider: Provider, call: CallInput): Exchange {
  try {
    return provider.exchange(call);
  } catch (error) {
    if (error instanceof TranslationError) {
      throw new GatewayError(400, error.message, {
        code: "invalid_request",
        param: error.param,
      });
    }
    throw error;
  }
}

/**
 * The most output tokens a call may produce on `entry`: the caller's limit,
 * capped by the model's.
 *
 * @param entry The model.
 * @param callerMaxOutput The caller's limit, if any.
 * @returns Tokens.
 */
export function outputLimit(
  entry: CatalogEntry,
  callerMaxOutput: number | undefined,
): number {
  return Math.min(callerMaxOutput ?? Infinity, entry.maxOutputTokens);
}

/**
 * The models a call may be served by, in order: the model asked for, its
 * catalog alternates, then the chat body's `models` list (OpenRouter's
 * convention), each resolved as the model is and kept only on this route.
 *
 * @param deps The catalog lookups.
 * @param route The route.
 * @param parsed The parsed call.
 * @param now The moment the call is made, epoch ms.
 * @returns The candidates, the model that serves the one asked for first, no duplicates.
 * @throws {GatewayError} As {@linkcode resolveModel}, or a 400 for a bad `models` list.
 */
export function fallbackCandidates(
  deps: Pick<CallDeps, "model" | "modelsOn">,
  route: RouteName,
  parsed: ParsedCall,
  now: number = Date.now(),
): CatalogEntry[] {
  const primary = resolveModel(deps, route, parsed.model, now);
  const listed = parsed.body.models;
  if (
    listed !== undefined &&
    (!Array.isArray(listed) || listed.length > MAX_FALLBACK_MODELS ||
      !listed.every((id) => typeof id === "string"))
  ) {
    throw new GatewayError(
      400,
      `Invalid "models": expected at most ${MAX_FALLBACK_MODELS} model ids`,
      { param: "models" },
    );
  }
  const ids = [
    ...(primary.alternates ?? []),
    ...((listed as string[] | undefined) ?? []),
  ];
  const candidates = [primary];
  for (const id of ids) {
    const listedByCaller = (listed as string[] | undefined)?.includes(id);
    // The caller's own list is checked as `model` is; a catalog alternate
    // that is missing, retired or off this route is skipped.
    if (listedByCaller) candidates.push(resolveModel(deps, route, id, now));
    else {
      const entry = deps.model(id);
      if (
        entry?.routes.includes(route) && modelStatus(entry, now) !== "retired"
      ) candidates.push(entry);
    }
  }
  return [...new Set(candidates)];
}

/** The most models a chat body's `models` list may name. */
const MAX_FALLBACK_MODELS = 8;
