/**
 * Keeping a provider key out of a relayed stream, however the provider
 * spells or splits it. Each upstream event is scrubbed as parsed JSON, so a
 * JSON-escaped key (`sk\u002dproj…`) is caught like a plain one, and a key
 * split across reads is whole by the time its event is. A key split across
 * events (one text delta ending `…sk-proj-01`, the next starting `23…`) is
 * what a caller's SDK puts back together: each string field is followed
 * across events by its path (`choices.0.delta.content`), an event whose
 * field ends with the start of the key is held back until the next events
 * show whether the key follows, and when it does the pieces in held events
 * are cut out and the key named once, by its id.
 *
 * The work per event is linear in its size: every string is looked at once,
 * and only its last characters (fewer than the key's length) for a start of
 * the key.
 *
 * @module
 */
import type { SseEvent } from "./providers/provider.ts";
import type { ProviderKey } from "./key_pool.ts";
import { scrubsKey } from "./scrub.ts";

/**
 * How many leading characters of the key a field must end with before its
 * event is held back. Fewer are relayed at once: every provider's keys start
 * with a fixed prefix at least this long (`sk-pro`, `sk-ant`, `xai-`+1,
 * `AIzaSy`, `sk-or-`), so what is relayed of the key before the hold is no
 * secret, and ordinary text rarely ends with one.
 */
export const HELD_PREFIX = 6;

/**
 * Most events held back at once. A field that ends with the start of the
 * key and is never continued would otherwise hold the stream to its end:
 * past this, the held events go out as they are (what they hold is not the
 * key, or the provider is spelling it out on purpose, which no scrub stops).
 */
export const MAX_HELD_EVENTS = 64;

/** Most bytes of event data held back at once (see {@linkcode MAX_HELD_EVENTS}). */
export const MAX_HELD_BYTES = 1 << 20;

/** One event on its way through the scrub. */
export interface ScrubbedEvent {
  /** The event, its data written again from `data` when the scrub changed it. */
  event: SseEvent;
  /** The event's parsed JSON (or `"[DONE]"`), scrubbed. */
  data: unknown;
}

/** An event held back, and whether the scrub changed it. */
interface Held {
  event: SseEvent;
  data: unknown;
  changed: boolean;
  /** Relayed already: its strings can no longer be changed. */
  sent: boolean;
}

/** A string field's last characters that are a start of the key, in one event. */
interface Piece {
  held: Held;
  holder: Record<string, unknown>;
  name: string;
  /** How many characters at the end of the field's string belong to the match. */
  chars: number;
}

/** Where one field's text stands across events: how much of the key it ends with. */
interface FieldMatch {
  matched: number;
  /** The events' pieces that make up the `matched` characters, oldest first. */
  pieces: Piece[];
}

/**
 * Scrubs one stream's events (see the module doc). Push each parsed event
 * with {@linkcode StreamScrub.push}, relay what it returns in order, and
 * relay what {@linkcode StreamScrub.flush} returns when the stream ends.
 *
 * @example A key split across two text deltas
 * ```ts
 * import { StreamScrub } from "./scrub_stream.ts";
 *
 * const key = { provider: "openai" as const, keyId: "openai:1a2b3c4d", secret: "sk-proj-0123456789abcdefghij" };
 * const scrub = new StreamScrub(key);
 * const delta = (content: string) => ({ choices: [{ delta: { content } }] });
 * const push = (content: string) =>
 *   scrub.push({ data: JSON.stringify(delta(content)) }, delta(content));
 * push("the key: sk-proj-0123"); // [] (held: it may go on with the key)
 * push("456789abcdefghij, done"); // both events, "the key: [key openai:1a2b3c4d]" and ", done"
 * ```
 */
export class StreamScrub {
  readonly #secret: string;
  readonly #mark: string;
  readonly #active: boolean;
  readonly #fields = new Map<string, FieldMatch>();
  /** How many open matches end in a field of each name: a field whose name has none skips the lookup. */
  readonly #openNames = new Map<string, number>();
  #held: Held[] = [];
  #heldBytes = 0;

  /**
   * Starts a stream's scrub.
   *
   * @param key The key the upstream request was sent with; one too short to be a real provider's is never scrubbed.
   */
  constructor(key: ProviderKey) {
    this.#secret = key.secret;
    this.#mark = `[key ${key.keyId}]`;
    this.#active = scrubsKey(key);
  }

  /**
   * Takes one upstream event and returns the events to relay now, in order
   * (none while it holds the event back).
   *
   * @param event The event as read.
   * @param data Its parsed JSON (or `"[DONE]"`).
   * @returns The events to relay now.
   */
  push(event: SseEvent, data: unknown): ScrubbedEvent[] {
    if (!this.#active) return [{ event, data }];
    const held: Held = { event, data, changed: false, sent: false };
    const path: string[] = [];
    held.data = this.#walk(data, held, path);
    this.#held.push(held);
    this.#heldBytes += event.data.length;
    if (
      this.#waiting() && this.#held.length < MAX_HELD_EVENTS &&
      this.#heldBytes < MAX_HELD_BYTES
    ) return [];
    return this.flush();
  }

  /**
   * Every event still held back, to relay in order (at the stream's end, or
   * when nothing more will be relayed to the caller).
   *
   * @returns The held events.
   */
  flush(): ScrubbedEvent[] {
    const out = this.#held.map((held) => {
      held.sent = true;
      return {
        event: held.changed
          ? { ...held.event, data: JSON.stringify(held.data) }
          : held.event,
        data: held.data,
      };
    });
    this.#held = [];
    this.#heldBytes = 0;
    return out;
  }

  /** Whether a field ends with enough of the key that its event must wait. */
  #waiting(): boolean {
    for (const field of this.#fields.values()) {
      if (field.matched >= HELD_PREFIX) return true;
    }
    return false;
  }

  /** Scrubs every string in `value` (names too), following each field's match; returns the value to keep. */
  #walk(value: unknown, held: Held, path: string[]): unknown {
    if (typeof value === "string") {
      // The event's data is the string itself (a bare JSON string).
      const box: Record<string, unknown> = { "": value };
      this.#field(box, "", held, path);
      return box[""];
    }
    if (typeof value !== "object" || value === null) return value;
    const holder = value as Record<string, unknown>;
    for (const name of Object.keys(holder)) {
      if (name.includes(this.#secret)) {
        const renamed = name.replaceAll(this.#secret, this.#mark);
        holder[renamed] = holder[name];
        delete holder[name];
        held.changed = true;
        this.#visit(holder, renamed, held, path);
      } else {
        this.#visit(holder, name, held, path);
      }
    }
    return value;
  }

  #visit(
    holder: Record<string, unknown>,
    name: string,
    held: Held,
    path: string[],
  ) {
    const inner = holder[name];
    if (typeof inner === "string") {
      path.push(name);
      this.#field(holder, name, held, path);
      path.pop();
    } else if (typeof inner === "object" && inner !== null) {
      path.push(name);
      this.#walk(inner, held, path);
      path.pop();
    }
  }

  /** Scrubs one string field and carries its match on to the next event. */
  #field(
    holder: Record<string, unknown>,
    name: string,
    held: Held,
    path: string[],
  ) {
    const secret = this.#secret;
    let text = holder[name] as string;
    if (text.includes(secret)) {
      text = text.replaceAll(secret, this.#mark);
      held.changed = true;
    }
    const fields = this.#fields;
    // A path is joined only when a match is open in a field of this name or
    // starts here.
    let key: string | undefined;
    const pathKey = () => key ??= path.join("\u0000");
    const open = this.#openNames.has(name) ? fields.get(pathKey()) : undefined;
    let before = "";
    if (open) {
      before = secret.slice(0, open.matched);
      const at = (before + text).indexOf(secret);
      if (at !== -1) {
        // The key runs from an earlier event into this one: cut the earlier
        // pieces, and name it where it began if that event is still held.
        const earlier = open.matched - at;
        const named = this.#cut(open.pieces, earlier);
        text = (named ? "" : this.#mark) + text.slice(secret.length - earlier);
        held.changed = true;
        before = "";
      }
    }
    if (text !== holder[name]) holder[name] = text;
    const matched = endOfKeyStart(before + text, secret);
    if (matched === 0) {
      if (open) this.#close(pathKey(), name);
      return;
    }
    const own = Math.min(matched, text.length);
    const pieces = own < matched && open
      ? trimmed(open.pieces, matched - own)
      : [];
    pieces.push({ held, holder, name, chars: own });
    if (!open) this.#openNames.set(name, (this.#openNames.get(name) ?? 0) + 1);
    fields.set(pathKey(), { matched, pieces });
  }

  /** Forgets the open match of the field at `pathKey`, named `name`. */
  #close(pathKey: string, name: string) {
    this.#fields.delete(pathKey);
    const count = this.#openNames.get(name)! - 1;
    if (count === 0) this.#openNames.delete(name);
    else this.#openNames.set(name, count);
  }

  /**
   * Cuts the last `count` characters of a field's text out of the pieces
   * that hold them, newest first; the mark goes where the oldest piece still
   * held began.
   *
   * @returns Whether the mark was placed (some piece was still held).
   */
  #cut(pieces: Piece[], count: number): boolean {
    let left = count;
    let oldestHeld: Piece | undefined;
    for (let i = pieces.length - 1; i >= 0 && left > 0; i--) {
      const piece = pieces[i];
      const take = Math.min(piece.chars, left);
      left -= take;
      if (piece.held.sent) break;
      const text = piece.holder[piece.name] as string;
      piece.holder[piece.name] = text.slice(0, text.length - take);
      piece.held.changed = true;
      oldestHeld = piece;
    }
    if (!oldestHeld) return false;
    oldestHeld.holder[oldestHeld.name] += this.#mark;
    return true;
  }
}

/** The newest pieces making up the last `count` characters. */
function trimmed(pieces: Piece[], count: number): Piece[] {
  const kept: Piece[] = [];
  let left = count;
  for (let i = pieces.length - 1; i >= 0 && left > 0; i--) {
    const chars = Math.min(pieces[i].chars, left);
    kept.unshift({ ...pieces[i], chars });
    left -= chars;
  }
  return kept;
}

/**
 * How many characters at the end of `text` are the start of `secret`
 * (fewer than all of it): the longest such ending. Only the last
 * `secret.length - 1` characters are looked at.
 *
 * @param text A field's text.
 * @param secret The key.
 * @returns The length of the longest ending of `text` that `secret` starts with.
 */
export function endOfKeyStart(text: string, secret: string): number {
  const first = secret[0];
  let at = text.indexOf(first, Math.max(0, text.length - secret.length + 1));
  while (at !== -1) {
    if (secret.startsWith(text.slice(at))) return text.length - at;
    at = text.indexOf(first, at + 1);
  }
  return 0;
}
