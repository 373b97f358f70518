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
 * @param prefix Text put before the random part, e.g. `"ck_"`.
 * @param bytes How many random bytes.
 * @returns The id.
 */
export function randomId(prefix: string, bytes: number): string {
  return prefix + base32(crypto.getRandomValues(new Uint8Array(bytes)));
}

let lastTime = -1;
const lastRandom = new Uint8Array(10);

/**
 * A ULID-like id that sorts by `time` (10 characters of epoch ms) then by 80
 * random bits, so ids from several processes in the same millisecond never
 * collide and a reverse KV list reads newest first. Within one process the
 * ids are monotonic: a second id in the same millisecond (or a clock that
 * stepped back) increments the random part instead of drawing a new one.
 *
 * @param time Epoch ms the id sorts by.
 * @returns The 26-character id.
 */
export function timeOrderedId(time: number): string {
  let at = Math.max(0, Math.floor(time));
  if (at <= lastTime) {
    at = lastTime;
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      lastRandom[i] = (lastRandom[i] + 1) & 0xff;
      if (lastRandom[i] !== 0) break;
    }
  } else {
    lastTime = at;
    crypto.getRandomValues(lastRandom);
  }
  let timePart = "";
  for (let i = 0; i < 10; i++) {
    timePart = CROCKFORD[at % 32] + timePart;
    at = Math.floor(at / 32);
  }
  return timePart + base32(lastRandom);
}
