/**
 * `GET /responses/{id}`: a stored response, as OpenAI returns it, to the
 * organization (API key) that created it; any other key, an unknown id or a
 * response made with `store: false` gets 404 `Response with id '…' not
 * found.` (see `response_store.ts`).
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";
import { JSON_HEADERS } from "./answers.ts";
import { openaiWire } from "./openai.ts";
import { requestRecord, type SimulatorState } from "./request_flow.ts";

/**
 * Answers `GET /responses/{id}`, recorded like any request.
 *
 * @param state The simulator's state.
 * @param request The request.
 * @param provider The provider addressed.
 * @param id The response id from the path.
 * @returns The stored response, or OpenAI's 401 / 404.
 */
export function retrieveResponse(
  state: SimulatorState,
  request: Request,
  provider: ProviderName,
  id: string,
): Response {
  const url = new URL(request.url);
  const key = openaiWire.readKey(request, url);
  const refusal = key === undefined
    ? openaiWire.missingKeyMessage
    : state.validKeys && !state.validKeys.has(key)
    ? openaiWire.invalidKeyMessage
    : undefined;
  const found = key === undefined || refusal
    ? undefined
    : state.responses.response(key, id);
  const status = refusal ? 401 : found ? 200 : 404;
  state.requests.push(
    requestRecord(request, url, { provider, key, body: undefined, status }),
  );
  state.changed();
  const body = found ??
    openaiWire.errorBody(
      status,
      refusal ?? `Response with id '${id}' not found.`,
      undefined,
      refusal ? undefined : { code: null },
    );
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}
