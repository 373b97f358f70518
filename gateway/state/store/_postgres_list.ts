/**
 * Listing the PostgreSQL store by prefix or range, in key order (or
 * reversed), a page of rows per round trip, resumable from a cursor. Private
 * to `store/`.
 *
 * @module
 */
import type postgres from "postgres";
import { Buffer } from "node:buffer";
import { decodeKey, encodeKey } from "./key_codec.ts";
import {
  concat,
  entryOf,
  PostgresListIterator,
  type Row,
} from "./_postgres_atomic.ts";

/** Rows a list reads per round trip. */
const LIST_PAGE = 500;

/**
 * Lists `gateway_kv` as `Deno.Kv.list` does.
 *
 * @param sql The client.
 * @param now The store's clock: rows whose expiry passed are skipped.
 * @param read Runs one page's query (waiting out an outage).
 * @param selector `prefix`, `start`, `end`.
 * @param options `limit`, `reverse`, `cursor`.
 * @returns The entries.
 */
export function listEntries<T>(
  sql: postgres.Sql,
  now: () => number,
  read: (query: () => Promise<Row[]>) => Promise<Row[]>,
  selector: Deno.KvListSelector,
  options: Deno.KvListOptions,
): Deno.KvListIterator<T> {
  const prefix = "prefix" in selector && selector.prefix
    ? encodeKey(selector.prefix)
    : undefined;
  let lo = "start" in selector && selector.start
    ? encodeKey(selector.start)
    : prefix
    ? concat(prefix, [0x00])
    : new Uint8Array();
  let hi = "end" in selector && selector.end
    ? encodeKey(selector.end)
    : prefix
    ? concat(prefix, [0xff])
    : new Uint8Array([0xff]);
  if (options.cursor) {
    const after = Uint8Array.from(
      atob(options.cursor),
      (c) => c.charCodeAt(0),
    );
    if (options.reverse) hi = after;
    else lo = concat(after, [0x00]);
  }
  const reverse = options.reverse === true;
  const limit = options.limit ?? Infinity;
  return new PostgresListIterator<T>(async function* (setCursor) {
    let served = 0;
    while (served < limit) {
      const page = Math.min(LIST_PAGE, limit - served);
      const rows = await read(() =>
        reverse
          ? sql<Row[]>`
          SELECT key, value, u64::text AS u64, version::text AS version
          FROM gateway_kv
          WHERE key >= ${Buffer.from(lo)} AND key < ${Buffer.from(hi)}
            AND (expires_at IS NULL OR expires_at > ${now()})
          ORDER BY key DESC LIMIT ${page}`
          : sql<Row[]>`
          SELECT key, value, u64::text AS u64, version::text AS version
          FROM gateway_kv
          WHERE key >= ${Buffer.from(lo)} AND key < ${Buffer.from(hi)}
            AND (expires_at IS NULL OR expires_at > ${now()})
          ORDER BY key LIMIT ${page}`
      );
      for (const row of rows) {
        const key = new Uint8Array(row.key);
        setCursor(key);
        served++;
        yield entryOf<T>(decodeKey(key), row) as Deno.KvEntry<T>;
      }
      if (rows.length < page) return undefined;
      const last = new Uint8Array(rows[rows.length - 1].key);
      if (reverse) hi = last;
      else lo = concat(last, [0x00]);
    }
    return undefined;
  });
}
