/**
 * How the simulator misbehaves: a default behaviour, one per provider key, and
 * a scripted queue of one-shot behaviours for particular requests.
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";

/** Overrides of the usage the simulator reports. */
export interface UsageOverride {
  /** All prompt tokens, cached ones included. */
  inputTokens?: number;
  /** Completion tokens. */
  outputTokens?: number;
  /** The cached part of the prompt (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`, Gemini `cachedContentTokenCount`). */
  cachedTokens?: number;
  /** Anthropic `cache_creation_input_tokens` (part of the prompt, billed as a cache write). */
  cacheCreationTokens?: number;
}

/**
 * What the simulator does with a request. Every field is optional; fields
 * from the default, the key's behaviour and a matched scripted step are merged
 * in that order, later ones winning.
 */
export interface Behaviour {
  /** Milliseconds to wait before the first byte of the response. */
  latencyMs?: number;
  /** Answer with this HTTP status and the provider's own error body (when 400 or above). */
  status?: number;
  /** With `status`: seconds sent in the `retry-after` header. */
  retryAfter?: number;
  /** With `status`: the error message. */
  message?: string;
  /** Never answer; the request ends when the client aborts or the simulator closes. */
  hang?: boolean;
  /** Answer 200 with a body that is not JSON (or, for streams, not valid SSE JSON). */
  garbage?: boolean;
  /** Stream this many SSE events, then destroy the connection without the terminal event. */
  cutStreamAfter?: number;
  /** Milliseconds between stream events. */
  chunkDelayMs?: number;
  /** Fixed reply text instead of the echo. */
  reply?: string;
  /** Usage overrides. */
  usage?: UsageOverride;
}

/** Which requests a scripted step applies to; absent fields match anything. */
export interface BehaviourMatch {
  /** The provider addressed (by path prefix). */
  provider?: ProviderName;
  /** The provider key presented. */
  key?: string;
  /** A substring of the request path, e.g. `"/chat/completions"` or `":streamGenerateContent"`. */
  path?: string;
}

/** A one-shot behaviour waiting in the queue for a matching request. */
export interface ScriptedStep {
  /** Which requests it applies to. */
  match?: BehaviourMatch;
  /** What to do with them. */
  behaviour: Behaviour;
  /** How many matching requests consume it (default 1). */
  times?: number;
}

/** What a request is matched on. */
export interface RequestIdentity {
  /** The provider addressed. */
  provider: ProviderName;
  /** The provider key presented, if any. */
  key: string | undefined;
  /** The request path. */
  path: string;
}

function matches(
  match: BehaviourMatch | undefined,
  request: RequestIdentity,
): boolean {
  if (!match) return true;
  if (match.provider !== undefined && match.provider !== request.provider) {
    return false;
  }
  if (match.key !== undefined && match.key !== request.key) return false;
  if (match.path !== undefined && !request.path.includes(match.path)) {
    return false;
  }
  return true;
}

/** The default behaviour, per-key behaviours and the scripted queue, in one place. */
export class BehaviourBook {
  #default: Behaviour;
  #byKey: Map<string, Behaviour>;
  #queue: { step: ScriptedStep; remaining: number }[] = [];

  /**
   * Creates a book.
   *
   * @param defaults The behaviour of every request.
   * @param byKey Behaviours per provider key.
   */
  constructor(defaults: Behaviour = {}, byKey: Record<string, Behaviour> = {}) {
    this.#default = defaults;
    this.#byKey = new Map(Object.entries(byKey));
  }

  /**
   * Replaces the default behaviour.
   *
   * @param behaviour The new default.
   */
  setDefault(behaviour: Behaviour): void {
    this.#default = behaviour;
  }

  /**
   * Sets, or with `undefined` removes, the behaviour of one provider key.
   *
   * @param key The provider key.
   * @param behaviour Its behaviour.
   */
  setForKey(key: string, behaviour: Behaviour | undefined): void {
    if (behaviour) this.#byKey.set(key, behaviour);
    else this.#byKey.delete(key);
  }

  /**
   * Queues a scripted step, consumed by the first matching requests.
   *
   * @param step The step.
   */
  enqueue(step: ScriptedStep): void {
    const times = step.times ?? 1;
    if (!Number.isInteger(times) || times < 1) {
      throw new RangeError(
        `Cannot enqueue a step for "${times}" requests: expected a positive integer`,
      );
    }
    this.#queue.push({ step, remaining: times });
  }

  /** Number of scripted requests still waiting in the queue. */
  get pending(): number {
    return this.#queue.reduce((sum, entry) => sum + entry.remaining, 0);
  }

  /** Empties the queue. */
  clearQueue(): void {
    this.#queue = [];
  }

  /**
   * The behaviour for one request: default, then the key's, then the first
   * matching queued step (which this consumes), merged.
   *
   * @param request What the request is matched on.
   * @returns The merged behaviour.
   */
  resolve(request: RequestIdentity): Behaviour {
    const keyed = request.key === undefined
      ? undefined
      : this.#byKey.get(request.key);
    const index = this.#queue.findIndex((entry) =>
      matches(entry.step.match, request)
    );
    if (index === -1) {
      return keyed ? { ...this.#default, ...keyed } : this.#default;
    }
    const entry = this.#queue[index];
    entry.remaining -= 1;
    if (entry.remaining === 0) this.#queue.splice(index, 1);
    return { ...this.#default, ...keyed, ...entry.step.behaviour };
  }
}
