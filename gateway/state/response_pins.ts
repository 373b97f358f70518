/**
 * Which provider key holds a Responses conversation's state. OpenAI keeps a
 * stored response, and a conversation, in the organization whose key
 * created it: a call that continues it (`previous_response_id`,
 * `conversation`) must go to a key of that organization, and a pool may mix
 * organizations. Each answer's id, and each conversation a call names, is
 * pinned here to the key that served it and to the caller that made it, in
 * the shared store, so every gateway process sends the continuation to the
 * same key, and no other caller can continue it.
 *
 * @module
 */
import { responsePinKey } from "./kv_keys.ts";

/**
 * How long a pin lasts: a stored response is kept 30 days (OpenAI's data
 * controls, https://platform.openai.com/docs/guides/your-data; xAI's
 * Responses API the same, https://docs.x.ai/docs/guides/chat).
 * Conversations have no such limit; their pin is renewed by every call that
 * names one, so a conversation in use keeps its key.
 */
export const STATE_RETENTION_MS = 30 * 86_400_000;

/** The longest id the gateway pins or looks up (OpenAI's are a few dozen characters). */
const MAX_STATE_ID_LENGTH = 256;

/** An id a provider gives stored state: letters, digits, `_` and `-`. */
const STATE_ID = /^[A-Za-z0-9_-]+$/;

/** What a pin holds. */
export interface StatePin {
  /** The provider key that created the state (its id, never the secret). */
  keyId: string;
  /** The caller whose call created it. */
  callerId: string;
  /** Epoch ms the pin lapses, as written (for `store copy`). */
  expiresAt: number;
}

/** The stored state a Responses call continues, as its body names it. */
export interface StateRefs {
  /** `previous_response_id`. */
  previousResponseId?: string;
  /** `conversation` (an id, or `{id}`). */
  conversationId?: string;
  /** `false` when the answer will not be stored (`store: false`), so its id is not pinned. */
  stored: boolean;
}

/**
 * Reads what stored state a Responses body continues. Ids that cannot be a
 * provider's (too long, odd characters) are left out: they are never
 * pinned, and the provider answers for them.
 *
 * @param body The Responses request body.
 * @returns The references.
 *
 * @example
 * ```ts
 * import { stateRefsOf } from "./response_pins.ts";
 *
 * stateRefsOf({ previous_response_id: "resp_1", conversation: { id: "conv_1" } });
 * // { previousResponseId: "resp_1", conversationId: "conv_1", stored: true }
 * ```
 */
export function stateRefsOf(body: Record<string, unknown>): StateRefs {
  const conversation = body.conversation;
  const conversationId = typeof conversation === "object" &&
      conversation !== null
    ? (conversation as { id?: unknown }).id
    : conversation;
  return {
    ...(stateId(body.previous_response_id) &&
      { previousResponseId: body.previous_response_id as string }),
    ...(stateId(conversationId) &&
      { conversationId: conversationId as string }),
    stored: body.store !== false,
  };
}

function stateId(value: unknown): boolean {
  return typeof value === "string" && value.length <= MAX_STATE_ID_LENGTH &&
    STATE_ID.test(value);
}

/** Where a call's state lives, or why it cannot be continued. */
export type PinLookup =
  | { kind: "none" }
  | { kind: "pinned"; keyId: string }
  | {
    kind: "foreign";
    param: "previous_response_id" | "conversation";
    id: string;
  };

/**
 * Finds the key that holds the state a call continues: the previous
 * response's pin first, else the conversation's. State another caller
 * created is `foreign`: the call must not reach it.
 *
 * @param kv The gateway's store.
 * @param provider The provider the call goes to.
 * @param callerId The caller.
 * @param refs What the call continues.
 * @returns The pinned key, `none` when nothing is pinned, or `foreign`.
 *
 * @example
 * ```ts
 * import { findPin, pinState } from "./response_pins.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * await pinState(kv, "openai", "ck_1", "key_a", { responseId: "resp_1" });
 * (await findPin(kv, "openai", "ck_1", { previousResponseId: "resp_1", stored: true })).kind; // "pinned"
 * kv.close();
 * ```
 */
export async function findPin(
  kv: Deno.Kv,
  provider: string,
  callerId: string,
  refs: StateRefs,
): Promise<PinLookup> {
  const asked = [
    ["previous_response_id", "response", refs.previousResponseId],
    ["conversation", "conversation", refs.conversationId],
  ] as const;
  const wanted = asked.filter(([, , id]) => id !== undefined);
  if (wanted.length === 0) return { kind: "none" };
  const pins = await kv.getMany<StatePin[]>(
    wanted.map(([, kind, id]) => responsePinKey(provider, kind, id!)),
  );
  for (const [index, [param, , id]] of wanted.entries()) {
    const pin = pins[index].value;
    if (!pin) continue;
    if (pin.callerId !== callerId) return { kind: "foreign", param, id: id! };
    return { kind: "pinned", keyId: pin.keyId };
  }
  return { kind: "none" };
}

/**
 * Pins a served call's state to the key that served it: the answer's id
 * (when it was stored) and the conversation it named, for
 * {@linkcode STATE_RETENTION_MS}. A conversation already pinned to another
 * caller keeps its pin.
 *
 * @param kv The gateway's store.
 * @param provider The provider that answered.
 * @param callerId The caller.
 * @param keyId The key that served the call.
 * @param state The answer's id and the conversation named.
 * @returns A promise that resolves once written.
 */
export async function pinState(
  kv: Deno.Kv,
  provider: string,
  callerId: string,
  keyId: string,
  state: { responseId?: string; conversationId?: string },
): Promise<void> {
  const pin: StatePin = {
    keyId,
    callerId,
    expiresAt: Date.now() + STATE_RETENTION_MS,
  };
  const options = { expireIn: STATE_RETENTION_MS };
  const writes: Promise<unknown>[] = [];
  if (stateId(state.responseId)) {
    writes.push(
      kv.set(
        responsePinKey(provider, "response", state.responseId!),
        pin,
        options,
      ),
    );
  }
  if (stateId(state.conversationId)) {
    const key = responsePinKey(provider, "conversation", state.conversationId!);
    // Only its own caller renews a conversation's pin; a check on what was
    // read keeps a racing caller from taking it over.
    writes.push((async () => {
      const held = await kv.get<StatePin>(key);
      if (held.value && held.value.callerId !== callerId) return;
      await kv.atomic().check(held).set(key, pin, options).commit();
    })());
  }
  await Promise.all(writes);
}

/** The pins a call reads and writes, bound to the gateway's store. */
export interface StatePins {
  /** {@linkcode findPin} on the store. */
  find(provider: string, callerId: string, refs: StateRefs): Promise<PinLookup>;
  /** {@linkcode pinState} on the store. */
  pin(
    provider: string,
    callerId: string,
    keyId: string,
    state: { responseId?: string; conversationId?: string },
  ): Promise<void>;
}

/**
 * The pins kept in `kv`, every process sharing them.
 *
 * @param kv The gateway's store (Deno KV or PostgreSQL).
 * @returns The pins.
 *
 * @example
 * ```ts
 * import { statePins } from "./response_pins.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const pins = statePins(kv);
 * await pins.pin("openai", "ck_1", "key_a", { conversationId: "conv_1" });
 * (await pins.find("openai", "ck_2", { conversationId: "conv_1", stored: true })).kind; // "foreign"
 * kv.close();
 * ```
 */
export function statePins(kv: Deno.Kv): StatePins {
  return {
    find: (provider, callerId, refs) => findPin(kv, provider, callerId, refs),
    pin: (provider, callerId, keyId, state) =>
      pinState(kv, provider, callerId, keyId, state),
  };
}
