/**
 * Helpers the business-state suites share (credits, key pool, traces, admin,
 * several processes): prices worked out independently of `credits.ts`,
 * waiting for a stream's settlement, and gateway subprocesses on loopback.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import {
  type LedgerEntry,
  listLedger,
} from "../gateway/state/credits/ledger.ts";
import { listTraces } from "../gateway/state/traces.ts";
import type { CatalogEntry } from "../gateway/state/catalog.ts";
import type { TraceRecord } from "../gateway/state/traces.ts";

/** The path of `gateway/main.ts`. */
export const GATEWAY_MAIN: string =
  new URL("../gateway/main.ts", import.meta.url).pathname;

/** The path of `gateway/cli/keys.ts`. */
export const KEYS_CLI: string =
  new URL("../gateway/cli/keys.ts", import.meta.url).pathname;

/**
 * The catalog entry of `id`.
 *
 * @param id A model id.
 * @returns Its entry; fails the test when there is none.
 */
export function model(id: string): CatalogEntry {
  const entry = DEFAULT_CATALOG.find((candidate) => candidate.id === id);
  assert.ok(entry, `no catalog entry "${id}"`);
  return entry;
}

/** Usage as the simulator is told to report it. */
export interface SimUsage {
  /** All prompt tokens, cached included. */
  inputTokens: number;
  /** The cached part. */
  cachedTokens: number;
  /** Completion tokens. */
  outputTokens: number;
}

/**
 * What a call should cost, micro-USD, worked out here rather than by
 * `costMicros`: a price in USD per million tokens is micro-USD per token;
 * cached input at the cached price (the input price where there is none);
 * the call rounded up once.
 *
 * @param usage The usage the simulator reported.
 * @param modelId The model.
 * @returns Integer micro-USD.
 */
export function expectedCost(
  usage: SimUsage & { cacheWriteTokens?: number },
  modelId: string,
): number {
  const { pricing } = model(modelId);
  const writes = usage.cacheWriteTokens ?? 0;
  const exact =
    (usage.inputTokens - usage.cachedTokens - writes) * pricing.input +
    usage.cachedTokens * (pricing.cachedInput ?? pricing.input) +
    writes * (pricing.cacheWrite ?? pricing.input) +
    usage.outputTokens * pricing.output;
  // Float products of decimal prices land a hair off the integer.
  return Math.ceil(exact - 1e-6);
}

/**
 * Waits until the charge of `requestId` is in the ledger (a stream settles
 * just after its last byte), then returns it.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller.
 * @param requestId The call's `x-request-id`.
 * @param timeoutMs How long to wait.
 * @returns The ledger entry.
 */
export async function ledgerEntryOf(
  kv: Deno.Kv,
  callerId: string,
  requestId: string,
  timeoutMs = 3_000,
): Promise<LedgerEntry> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await listLedger(kv, callerId)).find((entry) =>
      entry.requestId === requestId
    );
    if (found) return found;
    if (Date.now() > deadline) {
      assert.fail(`no ledger entry for "${requestId}" after ${timeoutMs} ms`);
    }
    await delay(20);
  }
}

/**
 * Sums ledger entries.
 *
 * @param entries The entries.
 * @returns The sum of their signed amounts, micro-USD.
 */
export function ledgerSum(entries: readonly LedgerEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.amountMicros, 0);
}

/**
 * Resolves after `ms`.
 *
 * @param ms Milliseconds.
 * @returns A promise.
 */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How long {@linkcode GatewayProcess.stop} waits after SIGTERM: the default drain and 15 s more. */
const STOP_TIMEOUT_MS = 45_000;

/** A gateway running as its own process (`gateway/main.ts`). */
export interface GatewayProcess {
  /** `http://127.0.0.1:port`. */
  url: string;
  /** The child process. */
  child: Deno.ChildProcess;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /**
   * Sends SIGTERM and waits for the exit; if it does not come within
   * 45 s, kills the process and rejects, with its stderr in the message.
   *
   * @returns The exit code and the whole stderr.
   */
  stop(): Promise<{ code: number; stderr: string }>;
}

/**
 * Starts `gateway/main.ts` with `env` on a free loopback port and waits
 * until it listens.
 *
 * @param env The gateway's environment (`PORT` and `HOST` are set here).
 * @param timeoutMs How long start-up may take.
 * @returns The running process.
 */
export async function spawnGateway(
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<GatewayProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", GATEWAY_MAIN],
    env: { ...env, PORT: "0", HOST: "127.0.0.1", NO_COLOR: "1" },
    clearEnv: false,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const { promise: url, resolve: listening } = Promise.withResolvers<string>();
  const drained = (async () => {
    for await (
      const chunk of child.stderr.pipeThrough(new TextDecoderStream())
    ) {
      text += chunk;
      const match = /listening on (http:\/\/[^\s]+)/.exec(text);
      if (match) listening(match[1]);
    }
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const started = await Promise.race([
    url,
    child.status.then(() => undefined),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (started === undefined) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await drained;
    assert.fail(`gateway did not start: ${text}`);
  }
  let stopping: Promise<{ code: number; stderr: string }> | undefined;
  return {
    url: started,
    child,
    stderr: () => text,
    stop() {
      stopping ??= (async () => {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
        // A gateway that outlives its drain (30 s by default) is hung; a
        // test fails saying so rather than waiting for ever.
        let timer: ReturnType<typeof setTimeout> | undefined;
        const exited = await Promise.race([
          child.status.then(() => true),
          new Promise<false>((resolve) => {
            timer = setTimeout(() => resolve(false), STOP_TIMEOUT_MS);
          }),
        ]);
        clearTimeout(timer);
        if (!exited) {
          try {
            child.kill("SIGKILL");
          } catch { /* already gone */ }
        }
        const status = await child.status;
        await drained;
        if (!exited) {
          throw new Error(
            `The gateway did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM and was killed; its stderr: "${text}"`,
          );
        }
        return { code: status.code, stderr: text };
      })();
      return stopping;
    },
  };
}

/**
 * POSTs JSON with a bearer key.
 *
 * @param url The full URL.
 * @param key The caller key.
 * @param body The JSON body.
 * @param headers More headers.
 * @returns The response.
 */
export function postJson(
  url: string,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/**
 * Waits until the trace of `requestId` is stored (a stream settles just
 * after its last byte), then returns it.
 *
 * @param kv The gateway's KV.
 * @param callerId The caller.
 * @param requestId The call's `x-request-id`.
 * @returns The trace record.
 */
export async function traceOf(
  kv: Deno.Kv,
  callerId: string,
  requestId: string,
): Promise<TraceRecord> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const trace = (await listTraces(kv, callerId, { limit: 50 })).find((t) =>
      t.requestId === requestId
    );
    if (trace) return trace;
    assert.ok(Date.now() < deadline, `no trace for ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
