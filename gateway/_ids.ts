/**
 * Random and time-ordered ids for KV entries. Private to the gateway.
 *
 * @module
 */

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

function base32(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(buffer >> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += CROCKFORD[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * A random id: `prefix` then `bytes` random bytes in lowercase Crockford base32.
 *
 * @example
 * ```ts
 * import { randomId } from "./_ids.ts";
 *
 * randomId("ck_", 10); // "ck_" then 16 base32 characters
 * ```
 *
 * @param prefix Text put before the random part, e.g. `"ck_"`.
 * @param bytes How many random bytes.
 * @returns The id.
 */
export function randomId(prefix: string, bytes: number): string {
  return prefix + base32(crypto.getRandomValues(new Uint8Array(bytes)));
}

function timePart(time: number): string {
  let rest = Math.max(0, Math.floor(time));
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

/**
 * A ULID-like id that sorts by `time` (10 characters of epoch ms) then by 80
 * random bits, so ids from several processes in the same millisecond never
 * collide and a reverse KV list reads newest first. Ids of the same
 * millisecond sort in no particular order; see {@linkcode monotonicId}.
 *
 * @example
 * ```ts
 * import { timeOrderedId } from "./_ids.ts";
 *
 * timeOrderedId(1_000) < timeOrderedId(2_000); // true
 * ```
 *
 * @param time Epoch ms the id sorts by.
 * @returns The 26-character id.
 */
export function timeOrderedId(time: number): string {
  return timePart(time) + base32(crypto.getRandomValues(new Uint8Array(10)));
}

let lastTime = -1;
const lastRandom = new Uint8Array(10);

/**
 * Like {@linkcode timeOrderedId}, but ids made by this process never sort
 * before an earlier one: a second id in the same millisecond (or after the
 * clock stepped back) increments the random part instead of drawing anew.
 * For the ledger, whose entries are made at commit time.
 *
 * @example
 * ```ts
 * import { monotonicId } from "./_ids.ts";
 *
 * const first = monotonicId(5_000);
 * monotonicId(5_000) > first; // true, even in the same millisecond
 * ```
 *
 * @param time Epoch ms, normally now.
 * @returns The 26-character id.
 */
export function monotonicId(time: number): string {
  const at = Math.max(0, Math.floor(time));
  if (at <= lastTime) {
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      lastRandom[i] = (lastRandom[i] + 1) & 0xff;
      if (lastRandom[i] !== 0) break;
    }
  } else {
    lastTime = at;
    crypto.getRandomValues(lastRandom);
  }
  return timePart(lastTime) + base32(lastRandom);
}

const HEX = Array.from(
  { length: 256 },
  (_, byte) => byte.toString(16).padStart(2, "0"),
);

/**
 * A UUID version 7 (RFC 9562): 48 bits of epoch ms, then 74 random bits, in
 * the usual hex form. It sorts by time, so the trace-id index entries of
 * calls that brought no trace id of their own are written in key order, next
 * to each other, instead of at a random place in the store's index.
 *
 * @example
 * ```ts
 * import { uuidV7 } from "./_ids.ts";
 *
 * uuidV7(0); // "00000000-0000-7…-…"
 * ```
 *
 * @param time Epoch ms, normally now.
 * @returns The 36-character UUID.
 */
export function uuidV7(time: number = Date.now()): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = Math.max(0, Math.floor(time));
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | (bytes[6] & 0x0f);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  let out = "";
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
    out += HEX[bytes[i]];
  }
  return out;
}
