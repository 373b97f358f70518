/**
 * The Responses API's stored responses, as the simulator keeps them: each
 * response (unless the request says `store: false`) under the organization
 * that created it, so `previous_response_id` continues its conversation.
 *
 * The simulator has no accounts: **each API key is its own organization**.
 * A response created with one key is unknown to every other key, as a
 * response of one OpenAI organization is to another's keys; a gateway that
 * pools keys of several organizations must send a chained call to the key
 * that created its predecessor.
 *
 * Each entry keeps only its own turn (the input it was sent and the output
 * it gave) and the id of its predecessor, so a chain of n turns costs O(n)
 * memory, not O(n²). Memory is bounded by a count and a size: past either,
 * the oldest responses are forgotten first, and a chain that reaches a
 * forgotten response ends there (its older turns are no longer replayed).
 *
 * @module
 */

import type { Json } from "./_json.ts";

/** Default most responses kept. */
export const DEFAULT_MAX_RESPONSES = 10_000;
/** Default most characters kept (serialised JSON of inputs and outputs). */
export const DEFAULT_MAX_STORED_CHARS = 64 * 1024 * 1024;
/** Most predecessors one chain replays; a longer chain stops there. */
const MAX_CHAIN = 1_000;

interface StoredResponse {
  organization: string;
  previous?: string;
  /** This turn's items: the input sent, then the output given. */
  items: Json[];
  /** The response object, as `GET /responses/{id}` returns it. */
  response?: Json;
  chars: number;
}

/** Limits of a {@linkcode ResponseStore}. */
export interface ResponseStoreOptions {
  /** Most responses kept (default {@linkcode DEFAULT_MAX_RESPONSES}). */
  maxResponses?: number;
  /** Most characters kept (default {@linkcode DEFAULT_MAX_STORED_CHARS}). */
  maxChars?: number;
}

/**
 * Stored responses per organization, oldest forgotten first.
 *
 * @example
 * ```ts
 * import { ResponseStore } from "./response_store.ts";
 *
 * const store = new ResponseStore();
 * store.put("sk-a", "resp_1", undefined, [{ role: "user", content: "hi" }]);
 * store.history("sk-a", "resp_1")?.length; // 1
 * store.history("sk-b", "resp_1"); // undefined: another organization
 * ```
 */
export class ResponseStore {
  readonly #entries = new Map<string, StoredResponse>();
  readonly #maxResponses: number;
  readonly #maxChars: number;
  #chars = 0;

  /**
   * Creates an empty store.
   *
   * @param options Its limits.
   */
  constructor(options: ResponseStoreOptions = {}) {
    this.#maxResponses = options.maxResponses ?? DEFAULT_MAX_RESPONSES;
    this.#maxChars = options.maxChars ?? DEFAULT_MAX_STORED_CHARS;
  }

  /** How many responses are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Keeps a response.
   *
   * @param organization Who created it (the API key).
   * @param id The response's id (`resp_…`).
   * @param previous The `previous_response_id` it continued, if any.
   * @param items Its turn: the input items sent, then its output items.
   * @param response The response object, for `GET /responses/{id}`.
   */
  put(
    organization: string,
    id: string,
    previous: string | undefined,
    items: Json[],
    response?: Json,
  ): void {
    const chars = JSON.stringify(items).length +
      (response === undefined ? 0 : JSON.stringify(response).length);
    // A turn larger than the whole budget is not kept: nothing else would be.
    if (chars > this.#maxChars) return;
    this.#forget(id);
    this.#entries.set(id, { organization, previous, items, response, chars });
    this.#chars += chars;
    for (const [oldest] of this.#entries) {
      if (
        this.#entries.size <= this.#maxResponses &&
        this.#chars <= this.#maxChars
      ) break;
      this.#forget(oldest);
    }
  }

  /**
   * Whether the organization can continue from a response.
   *
   * @param organization The API key asking.
   * @param id The `previous_response_id`.
   * @returns `true` when the response is kept and is the organization's.
   */
  has(organization: string, id: string): boolean {
    return this.#entries.get(id)?.organization === organization;
  }

  /**
   * A stored response object, as `GET /responses/{id}` returns it.
   *
   * @param organization The API key asking.
   * @param id The response's id.
   * @returns The response, or `undefined` when this organization has no such response.
   */
  response(organization: string, id: string): Json | undefined {
    const entry = this.#entries.get(id);
    return entry?.organization === organization ? entry.response : undefined;
  }

  /**
   * The conversation up to and including a response, oldest item first.
   *
   * @param organization The API key asking.
   * @param id The `previous_response_id`.
   * @returns The items, or `undefined` when the response is unknown to this organization.
   */
  history(organization: string, id: string): Json[] | undefined {
    if (!this.has(organization, id)) return undefined;
    const turns: Json[][] = [];
    let at: string | undefined = id;
    while (at !== undefined && turns.length < MAX_CHAIN) {
      const entry = this.#entries.get(at);
      if (entry?.organization !== organization) break;
      turns.push(entry.items);
      at = entry.previous;
    }
    return turns.reverse().flat();
  }

  #forget(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#chars -= entry.chars;
    this.#entries.delete(id);
  }
}
