/**
 * Token counting, passed through to the provider and never charged:
 * Anthropic's `POST /messages/count_tokens` and Gemini's `:countTokens`. The
 * caller is authenticated (middleware) and the model resolved as for a call;
 * the request goes upstream with a key from the pool.
 *
 * @module
 */
import type { CallDeps } from "./call.ts";
import { resolveModel } from "./call_input.ts";
import { GatewayError } from "./errors.ts";
import { parseJson } from "./providers/provider.ts";
import type { RouteName } from "./types.ts";

/** One count-tokens request. */
export interface CountTokensRequest {
  /** The route whose models it counts for: `messages` or `gemini`. */
  route: RouteName;
  /** The model: the body's `model` (messages) or the path's (gemini). */
  model: string;
  /** The parsed body. */
  body: Record<string, unknown>;
  /** The caller's headers (Anthropic's version and beta headers go on). */
  headers: Headers;
}

/**
 * Counts a request's input tokens with the provider.
 *
 * @param deps The gateway's catalog, providers and key pool.
 * @param request The request.
 * @returns The provider's answer, as it sent it.
 * @throws {GatewayError} For an unknown model, a model not on the route, no free key, or an upstream failure.
 */
export async function countTokens(
  deps: Pick<
    CallDeps,
    | "model"
    | "modelsOn"
    | "providers"
    | "baseUrls"
    | "keyPool"
    | "upstreamTimeoutMs"
  >,
  request: CountTokensRequest,
): Promise<Response> {
  const entry = resolveModel(deps, request.route, request.model);
  const provider = deps.providers[entry.provider];
  const call = {
    route: request.route,
    entry,
    body: request.body,
    stream: false,
    maxOutputTokens: 0,
    query: {},
    headers: request.headers,
  };
  const upstream = provider.countTokens?.(call);
  if (!upstream) {
    throw new GatewayError(
      400,
      `The ${entry.provider} provider has no token counting`,
    );
  }
  const acquired = deps.keyPool.acquire(entry.provider, 0);
  if (!acquired.ok) {
    throw new GatewayError(
      acquired.retryAfterMs < 0 ? 503 : 429,
      `No ${entry.provider} key is free to count tokens`,
      acquired.retryAfterMs < 0 ? { code: "no_provider_key" } : {
        retryAfterSeconds: Math.max(1, Math.ceil(acquired.retryAfterMs / 1000)),
      },
    );
  }
  const key = acquired.key;
  let response: Response;
  let text: string;
  try {
    response = await fetch(deps.baseUrls[entry.provider] + upstream.path, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...upstream.headers,
        ...provider.headers(key.secret),
      },
      body: JSON.stringify(upstream.body),
      signal: AbortSignal.timeout(deps.upstreamTimeoutMs),
    });
    text = await response.text();
  } catch (error) {
    throw new GatewayError(
      502,
      `The ${entry.provider} provider could not be reached: ${
        (error as Error).message
      }`,
      { code: "upstream_unreachable" },
    );
  } finally {
    deps.keyPool.recordUsage(key, 0);
  }
  if (!response.ok) {
    const message = provider.errorMessage(text).replaceAll(
      key.secret,
      `[key ${key.keyId}]`,
    );
    throw new GatewayError(
      response.status >= 500 ? 502 : response.status,
      message,
      { code: "upstream_error" },
    );
  }
  const json = parseJson(text);
  if (typeof json !== "object" || json === null) {
    throw new GatewayError(
      502,
      `The ${entry.provider} provider answered with a body that is not JSON`,
      { code: "upstream_garbage" },
    );
  }
  return Response.json(json);
}
