/**
 * Deno KV keys as bytes that sort as Deno KV sorts them, so an ordered store
 * (a PostgreSQL `bytea` primary key compares bytes) lists by prefix and range
 * in the same order. The part tags are the ones `denokv` uses: bytes `0x01`,
 * strings `0x02`, integers (`bigint`) `0x14`, numbers `0x21`, `false`
 * `0x26`, `true` `0x27`; a part ends with `0x00` and a `0x00` inside it is
 * escaped as `0x00 0xff`.
 *
 * @example Round trip
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeKey, encodeKey } from "./key_codec.ts";
 *
 * assert.deepStrictEqual(decodeKey(encodeKey(["ledger", "ck_1", 42])), ["ledger", "ck_1", 42]);
 * ```
 *
 * @module
 */

const BYTES = 0x01;
const STRING = 0x02;
const BIGINT = 0x14;
const NUMBER = 0x21;
const FALSE = 0x26;
const TRUE = 0x27;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Encodes a key so that byte order is Deno KV's key order.
 *
 * @param key The key.
 * @returns Its bytes.
 * @throws {TypeError} For a part of a type Deno KV does not allow, or a bigint outside 64 bits.
 */
export function encodeKey(key: Deno.KvKey): Uint8Array {
  const out: number[] = [];
  for (const part of key) {
    if (part instanceof Uint8Array) {
      out.push(BYTES);
      escaped(out, part);
    } else if (typeof part === "string") {
      out.push(STRING);
      escaped(out, new TextEncoder().encode(part));
    } else if (typeof part === "bigint") {
      if (part < INT64_MIN || part > INT64_MAX) {
        throw new TypeError(`Key part "${part}" is outside 64 bits`);
      }
      out.push(BIGINT);
      const view = new DataView(new ArrayBuffer(8));
      view.setBigUint64(0, part - INT64_MIN);
      out.push(...new Uint8Array(view.buffer));
    } else if (typeof part === "number") {
      out.push(NUMBER);
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, part === 0 ? 0 : part);
      const bytes = new Uint8Array(view.buffer);
      // Negative numbers sort reversed: flip every bit; positive ones above
      // them: flip the sign bit.
      if (bytes[0] & 0x80) { for (let i = 0; i < 8; i++) bytes[i] ^= 0xff; }
      else bytes[0] ^= 0x80;
      out.push(...bytes);
    } else if (typeof part === "boolean") {
      out.push(part ? TRUE : FALSE);
    } else {
      throw new TypeError(`Key part of type "${typeof part}" is not allowed`);
    }
  }
  return new Uint8Array(out);
}

function escaped(out: number[], bytes: Uint8Array): void {
  for (const byte of bytes) {
    out.push(byte);
    if (byte === 0) out.push(0xff);
  }
  out.push(0);
}

/**
 * Decodes bytes written by {@linkcode encodeKey}.
 *
 * @param bytes The encoded key.
 * @returns The key.
 * @throws {TypeError} When the bytes are not an encoded key.
 */
export function decodeKey(bytes: Uint8Array): Deno.KvKey {
  const key: Deno.KvKeyPart[] = [];
  let at = 0;
  const unescape = (): Uint8Array => {
    const part: number[] = [];
    for (;;) {
      if (at >= bytes.length) throw new TypeError("Unterminated key part");
      const byte = bytes[at++];
      if (byte !== 0) part.push(byte);
      else if (bytes[at] === 0xff) {
        part.push(0);
        at++;
      } else return new Uint8Array(part);
    }
  };
  while (at < bytes.length) {
    const tag = bytes[at++];
    if (tag === BYTES) key.push(unescape());
    else if (tag === STRING) key.push(new TextDecoder().decode(unescape()));
    else if (tag === BIGINT || tag === NUMBER) {
      if (at + 8 > bytes.length) throw new TypeError("Truncated key part");
      const part = bytes.slice(at, at + 8);
      at += 8;
      const view = new DataView(part.buffer);
      if (tag === BIGINT) key.push(view.getBigUint64(0) + INT64_MIN);
      else {
        if (part[0] & 0x80) part[0] ^= 0x80;
        else for (let i = 0; i < 8; i++) part[i] ^= 0xff;
        key.push(view.getFloat64(0));
      }
    } else if (tag === FALSE || tag === TRUE) key.push(tag === TRUE);
    else throw new TypeError(`Unknown key part tag "${tag}"`);
  }
  return key;
}

/**
 * Lowercase hex of bytes.
 *
 * @param bytes The bytes.
 * @returns Their hex.
 */
export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
