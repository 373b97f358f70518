/**
 * What the console pages read beyond the admin API they share with scripts:
 * the trace browser across callers. (Usage comes from `usage_report.ts`.)
 *
 * @module
 */
import { z } from "zod";
import { firstIssue } from "../../_zod.ts";
import { listCallers } from "../../state/callers.ts";
import { GatewayError } from "../../errors.ts";
import { listTraces, MAX_TRACE_LIMIT } from "../../state/traces.ts";
import type { TraceRecord } from "../../state/traces.ts";

const querySchema = z.object({
  caller: z.string().min(1).max(200).optional(),
  model: z.string().min(1).max(200).optional(),
  route: z.string().min(1).max(40).optional(),
  status: z.string().regex(
    /^(\d{3}|[2-5]xx)$/,
    "must be a status such as 200 or a class such as 5xx",
  ).optional(),
  trace_id: z.string().min(1).max(256).optional(),
  since: z.iso.datetime({ offset: true, local: true }).optional(),
  until: z.iso.datetime({ offset: true, local: true }).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_TRACE_LIMIT).optional(),
  before: z.string().regex(
    /^\d{1,15}~[\w.:-]{1,200}$/,
    "must be the `next` cursor of a previous page",
  ).optional(),
});

/** One trace in the browser: the record and its caller's name. */
export type BrowsedTrace = TraceRecord & { callerName?: string };

/** One page of the trace browser. */
export interface TracePage {
  /** The traces, newest first. */
  data: BrowsedTrace[];
  /** The cursor of the next (older) page, to pass as `before`; `null` on the last page. */
  next: string | null;
}

/** The position of a trace in the browser's order (newest first; ties by request id). */
function cursorOf(trace: TraceRecord): string {
  return `${trace.time}~${trace.requestId}`;
}

/** Whether `trace` comes after the cursor `before` in the browser's order. */
function isOlder(trace: TraceRecord, before: string): boolean {
  const split = before.indexOf("~");
  const time = Number(before.slice(0, split));
  const requestId = before.slice(split + 1);
  return trace.time < time ||
    (trace.time === time && trace.requestId < requestId);
}

/**
 * Lists traces across callers, newest first, filtered by caller, model,
 * route, status (`200`, `5xx`), trace id and time (`since`, `until`: ISO
 * 8601), one page at a time: `before` is the `next` cursor of the page
 * before. Each caller's newest {@linkcode MAX_TRACE_LIMIT} records are read
 * (the trace-id index when one is given), then merged, so paging reaches that
 * deep into each caller's history.
 *
 * @example
 * ```ts
 * import { browseTraces } from "./data.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const first = await browseTraces(kv, new URLSearchParams({ limit: "200" }));
 * if (first.next !== null) {
 *   await browseTraces(kv, new URLSearchParams({ limit: "200", before: first.next }));
 * }
 * kv.close();
 * ```
 *
 * @param kv The gateway's KV.
 * @param params The query string.
 * @returns At most `limit` traces (default 100) and the next page's cursor.
 * @throws {GatewayError} A 400 naming a bad parameter.
 */
export async function browseTraces(
  kv: Deno.Kv,
  params: URLSearchParams,
): Promise<TracePage> {
  const parsed = querySchema.safeParse(Object.fromEntries(params));
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new GatewayError(
      400,
      `Invalid query parameter "${param}": ${message}`,
      {
        code: "invalid_request",
        param,
      },
    );
  }
  const q = parsed.data;
  const limit = q.limit ?? 100;
  const callers = (await listCallers(kv)).filter((c) =>
    q.caller === undefined || c.id === q.caller
  );
  const since = q.since === undefined ? -Infinity : Date.parse(q.since);
  const until = q.until === undefined ? Infinity : Date.parse(q.until);
  const matches = (t: TraceRecord) =>
    t.time >= since && t.time <= until &&
    (q.before === undefined || isOlder(t, q.before)) &&
    (q.model === undefined || t.model === q.model) &&
    (q.route === undefined || t.route === q.route) &&
    (q.status === undefined ||
      (q.status.endsWith("xx")
        ? String(t.status)[0] === q.status[0]
        : String(t.status) === q.status));
  const found: BrowsedTrace[] = [];
  for (const caller of callers) {
    // Filters other than the trace id are applied after reading, so read
    // more than `limit` to still fill the page.
    const traces = await listTraces(kv, caller.id, {
      traceId: q.trace_id,
      limit: MAX_TRACE_LIMIT,
    });
    for (const trace of traces) {
      if (matches(trace)) found.push({ ...trace, callerName: caller.name });
    }
  }
  found.sort((a, b) => b.time - a.time || (a.requestId < b.requestId ? 1 : -1));
  const data = found.slice(0, limit);
  return {
    data,
    next: found.length > limit ? cursorOf(data[data.length - 1]) : null,
  };
}
