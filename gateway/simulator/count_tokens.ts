/**
 * The token-counting endpoints (Anthropic's `count_tokens`, Gemini's
 * `:countTokens`), recorded like any request.
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";
import type { Json } from "./_json.ts";
import { JSON_HEADERS } from "./answers.ts";
import { modelLookup } from "./model_facts.ts";
import {
  BadRequestError,
  parseBody,
  type RequestContext,
  requestRecord,
  type SimulatorState,
  type Wire,
} from "./request_flow.ts";
import { tokensForChars } from "./tokens.ts";

/**
 * Answers a token-counting request (Anthropic's `count_tokens`, Gemini's
 * `:countTokens`): one token per four characters of the body, recorded like
 * any request; 401 in the family's format without a key, and the provider's
 * 400 for what `check` refuses (the same rules as the generation endpoint).
 *
 * @param state The simulator's state.
 * @param request The request.
 * @param provider The provider addressed.
 * @param wire The family's conventions.
 * @param answer Builds the provider's answer from the count.
 * @param check Refuses a body the provider refuses, by throwing {@linkcode BadRequestError}.
 * @returns The response.
 */
export async function answerCountTokens(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  wire: Wire,
  answer: (tokens: number) => Json,
  check?: (body: Json, context: RequestContext) => void,
): Promise<Response> {
  const url = new URL(request.url);
  const text = await request.text();
  const key = wire.readKey(request, url);
  const body = parseBody(text);
  let refusal: BadRequestError | undefined;
  if (key !== undefined && check && typeof body === "object" && body !== null) {
    try {
      check(body as Json, {
        key,
        headers: request.headers,
        model: modelLookup(provider, state.models),
        responses: state.responses,
      });
    } catch (error) {
      if (!(error instanceof BadRequestError)) throw error;
      refusal = error;
    }
  }
  const status = key ? refusal?.status ?? 200 : 401;
  state.requests.push(
    requestRecord(request, url, { provider, key, body, status }),
  );
  state.changed();
  const answered = !key
    ? wire.errorBody(401, "Missing API key")
    : refusal
    ? wire.errorBody(
      refusal.status,
      refusal.message,
      undefined,
      refusal.details,
    )
    : answer(tokensForChars(text.length));
  return new Response(JSON.stringify(answered), {
    status,
    headers: JSON_HEADERS,
  });
}
