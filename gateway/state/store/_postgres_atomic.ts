/**
 * The PostgreSQL store's rows and the two objects it hands out besides
 * itself: the atomic operation (checks and mutations gathered, then
 * committed in one round trip) and the list iterator (pages of rows in key
 * order). Private to `store/`.
 *
 * @module
 */
import { deserialize, serialize } from "node:v8";
import { Buffer } from "node:buffer";
import { encodeKey, toHex } from "./key_codec.ts";

/** What an atomic operation needs of its store. */
export interface AtomicCommitter {
  /** The clock, epoch ms. */
  now(): number;
  /** Commits checks and mutations in one round trip. */
  commitOps(
    ops: { c: Check[]; m: Mutation[] },
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError>;
}

export interface Row {
  key: Uint8Array;
  value: Uint8Array | null;
  u64: string | null;
  version: string;
}

export type Check = { k: string; v: string | null };
export type Mutation = {
  t: "set" | "delete" | "sum" | "min" | "max";
  k: string;
  v?: string;
  u?: string;
  x?: number;
};

export function versionstampOf(version: string | bigint): string {
  return BigInt(version).toString(16).padStart(20, "0");
}

function versionOf(versionstamp: string | null): string | null {
  if (versionstamp === null) return null;
  if (!/^[0-9a-f]{20}$/.test(versionstamp)) {
    throw new TypeError(`Invalid versionstamp "${versionstamp}"`);
  }
  return BigInt(`0x${versionstamp}`).toString();
}

export function entryOf<T>(
  key: Deno.KvKey,
  row: Row | undefined,
): Deno.KvEntryMaybe<T> {
  if (!row) return { key, value: null, versionstamp: null };
  const value = row.u64 !== null
    ? new Deno.KvU64(BigInt(row.u64))
    : deserialize(Buffer.from(row.value!));
  return { key, value: value as T, versionstamp: versionstampOf(row.version) };
}

/** An atomic operation on the PostgreSQL store, committed in one round trip. */
export class PostgresAtomic implements Deno.AtomicOperation {
  readonly #store: AtomicCommitter;
  readonly #checks: Check[] = [];
  readonly #mutations: Mutation[] = [];

  constructor(store: AtomicCommitter) {
    this.#store = store;
  }

  check(...checks: Deno.AtomicCheck[]): this {
    for (const check of checks) {
      this.#checks.push({
        k: toHex(encodeKey(check.key)),
        v: versionOf(check.versionstamp),
      });
    }
    return this;
  }

  mutate(...mutations: Deno.KvMutation[]): this {
    for (const mutation of mutations) {
      switch (mutation.type) {
        case "set":
          this.set(mutation.key, mutation.value, {
            expireIn: mutation.expireIn,
          });
          break;
        case "delete":
          this.delete(mutation.key);
          break;
        case "sum":
        case "min":
        case "max":
          this.#u64(mutation.type, mutation.key, mutation.value.value);
          break;
        default:
          throw new TypeError(
            `Mutation "${
              (mutation as { type: string }).type
            }" is not supported by the PostgreSQL store`,
          );
      }
    }
    return this;
  }

  sum(key: Deno.KvKey, n: bigint): this {
    return this.#u64("sum", key, n);
  }

  min(key: Deno.KvKey, n: bigint): this {
    return this.#u64("min", key, n);
  }

  max(key: Deno.KvKey, n: bigint): this {
    return this.#u64("max", key, n);
  }

  #u64(t: "sum" | "min" | "max", key: Deno.KvKey, n: bigint): this {
    if (n < 0n || n >= 2n ** 64n) {
      throw new RangeError(`Value "${n}" is not a 64-bit unsigned integer`);
    }
    this.#mutations.push({ t, k: toHex(encodeKey(key)), u: n.toString() });
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    const k = toHex(encodeKey(key));
    const x = options?.expireIn === undefined
      ? undefined
      : this.#store.now() + options.expireIn;
    if (value instanceof Deno.KvU64) {
      this.#mutations.push({ t: "set", k, u: value.value.toString(), x });
    } else {
      this.#mutations.push({
        t: "set",
        k,
        v: toHex(new Uint8Array(serialize(value))),
        x,
      });
    }
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutations.push({ t: "delete", k: toHex(encodeKey(key)) });
    return this;
  }

  enqueue(): this {
    throw new TypeError("Queues are not supported by the PostgreSQL store");
  }

  commit(): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    return this.#store.commitOps({ c: this.#checks, m: this.#mutations });
  }
}

/** The list iterator of the PostgreSQL store: pages of rows in key order. */
export class PostgresListIterator<T> implements Deno.KvListIterator<T> {
  readonly #pages: AsyncGenerator<Deno.KvEntry<T>, undefined>;
  #cursor = "";

  constructor(
    pages: (setCursor: (key: Uint8Array) => void) => AsyncGenerator<
      Deno.KvEntry<T>,
      undefined
    >,
  ) {
    this.#pages = pages((key) => {
      this.#cursor = btoa(String.fromCharCode(...key));
    });
  }

  get cursor(): string {
    return this.#cursor;
  }

  next(): Promise<IteratorResult<Deno.KvEntry<T>, undefined>> {
    return this.#pages.next();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Deno.KvEntry<T>> {
    return this;
  }
}

export function concat(bytes: Uint8Array, tail: number[]): Uint8Array {
  const out = new Uint8Array(bytes.length + tail.length);
  out.set(bytes);
  out.set(tail, bytes.length);
  return out;
}
