/**
 * A Responses call's stored state, kept with the key that holds it: before
 * the key pick, the key a call's `previous_response_id` or `conversation`
 * is pinned to (another caller's state is refused as not found); after the
 * answer, its id and conversation pinned to the key that served it. The
 * pins themselves live in `state/response_pins.ts`.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import { type StateRefs, stateRefsOf } from "../state/response_pins.ts";
import type { Exchange, StreamRelay } from "../upstream/providers/provider.ts";
import type { CallDeps, CallRequest } from "./deps.ts";

/** A Responses call's state: what it continues, and the key it must use. */
export interface CallState {
  /** What the call's body continues. */
  refs: StateRefs;
  /** The key that holds it, when one is pinned. */
  pinnedKeyId?: string;
}

/**
 * Reads what a Responses call continues and finds the key that holds it.
 *
 * @param deps The call's pins.
 * @param request The call (its route and caller).
 * @param provider The provider the call goes to.
 * @param body The request body.
 * @returns The state, or `undefined` for a call that keeps none (another route, or no pins).
 * @throws {GatewayError} 400 `previous_response_not_found` (in OpenAI's words) for state another caller created.
 */
export async function callState(
  deps: Pick<CallDeps, "statePins">,
  request: Pick<CallRequest, "route" | "caller">,
  provider: string,
  body: Record<string, unknown>,
): Promise<CallState | undefined> {
  if (request.route !== "responses" || !deps.statePins) return undefined;
  const refs = stateRefsOf(body);
  const found = await deps.statePins.find(provider, request.caller.id, refs);
  if (found.kind === "foreign") {
    // As the provider says of an id its organization does not hold: the
    // state exists, but it is not this caller's to read or continue.
    throw new GatewayError(
      400,
      found.param === "previous_response_id"
        ? `Previous response with id '${found.id}' not found.`
        : `Conversation with id '${found.id}' not found.`,
      {
        code: `${
          found.param === "conversation" ? "conversation" : "previous_response"
        }_not_found`,
        param: found.param,
      },
    );
  }
  return {
    refs,
    ...(found.kind === "pinned" && { pinnedKeyId: found.keyId }),
  };
}

/**
 * Pins what an answer stored to the key that served it: its id (unless the
 * call asked `store: false`) and the conversation it named. A failed write
 * is logged: the answer still goes out, and the next call in the chain is
 * sent as an unpinned one.
 *
 * @param deps The call's pins and log.
 * @param request The call.
 * @param provider The provider that answered.
 * @param keyId The key that served it.
 * @param state The call's state.
 * @param stateId The answer's id, if it named one.
 * @returns A promise that resolves once written (or logged).
 */
export async function pinAnswer(
  deps: Pick<CallDeps, "statePins" | "log">,
  request: Pick<CallRequest, "caller" | "requestId">,
  provider: string,
  keyId: string,
  state: CallState,
  stateId: string | undefined,
): Promise<void> {
  try {
    await deps.statePins?.pin(provider, request.caller.id, keyId, {
      ...(state.refs.stored && stateId !== undefined &&
        { responseId: stateId }),
      ...(state.refs.conversationId !== undefined &&
        { conversationId: state.refs.conversationId }),
    });
  } catch (error) {
    deps.log({
      level: "error",
      requestId: request.requestId,
      message: `Pinning the answer's stored state to its key failed: ${error}`,
    });
  }
}

/**
 * The exchange with a relay that tells `onStateId` the answer's id as soon
 * as an event names it (the first, `response.created`), so the pin is
 * written long before the caller can chain a call on the answer.
 *
 * @param exchange The call's exchange.
 * @param onStateId Told once.
 * @returns The exchange to relay with.
 */
export function pinningExchange(
  exchange: Exchange,
  onStateId: (stateId: string) => void,
): Exchange {
  return {
    ...exchange,
    relay(): StreamRelay {
      const inner = exchange.relay();
      let told = false;
      return {
        event(event, data) {
          const out = inner.event(event, data);
          if (!told && inner.stateId !== undefined) {
            told = true;
            onStateId(inner.stateId);
          }
          return out;
        },
        end: () => inner.end(),
        get usage() {
          return inner.usage;
        },
        get contentDone() {
          return inner.contentDone;
        },
        get failure() {
          return inner.failure;
        },
        get stateId() {
          return inner.stateId;
        },
      };
    },
  };
}
