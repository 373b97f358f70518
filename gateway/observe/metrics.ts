/**
 * `GET /metrics` in the Prometheus text format, for the operator's scraper:
 * calls by route, model, provider and status; tokens and cost; latency and
 * time to first token; the provider key pool by state; and how long the
 * money path's KV commits take. Counted per process (Prometheus scrapes each
 * one), from the same trace records the gateway stores, in the exposition
 * `prom-client` writes, by `_prometheus.ts`.
 *
 * @module
 */
import {
  CollectedGaugeFamily,
  CounterFamily,
  type CounterSeries,
  HistogramFamily,
  type HistogramSeries,
  type Labels,
  PROMETHEUS_CONTENT_TYPE,
  renderFamilies,
} from "./_prometheus.ts";
import type { KeyHealth } from "../upstream/key_pool.ts";
import type { TraceRecord } from "../state/traces.ts";

/** The gateway's metrics of one process. */
export interface GatewayMetrics {
  /** Counts one finished call from its trace record. */
  observe(trace: TraceRecord): void;
  /** Times one KV commit of the money path. */
  observeCommit(seconds: number): void;
  /** The exposition: body and content type. */
  render(): Promise<{ body: string; contentType: string }>;
}

interface CallChildren {
  requests: Map<number, CounterSeries>;
  input: CounterSeries;
  output: CounterSeries;
  cached: CounterSeries;
  cost: CounterSeries;
  latency: HistogramSeries;
  ttft: HistogramSeries;
}

const LATENCY_BUCKETS = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
];

/**
 * Creates the metrics of one gateway process.
 *
 * @example
 * ```ts
 * import { createMetrics } from "./metrics.ts";
 *
 * const metrics = createMetrics(() => []);
 * const { contentType } = await metrics.render();
 * console.log(contentType); // the Prometheus text format
 * ```
 *
 * @param keyHealth Reads the provider key pool at each scrape.
 * @returns The metrics.
 */
export function createMetrics(keyHealth: () => KeyHealth[]): GatewayMetrics {
  const requests = new CounterFamily(
    "mcpkit_gateway_requests_total",
    "Calls answered, by route, model, provider and HTTP status",
    ["route", "model", "provider", "status"],
  );
  const tokens = new CounterFamily(
    "mcpkit_gateway_tokens_total",
    "Tokens billed, by model, provider and kind (input, output, cached)",
    ["model", "provider", "kind"],
  );
  const cost = new CounterFamily(
    "mcpkit_gateway_cost_usd_total",
    "USD charged to callers, by model and provider",
    ["model", "provider"],
  );
  const latency = new HistogramFamily(
    "mcpkit_gateway_request_duration_seconds",
    "Time from request to last byte, by route and provider",
    ["route", "provider"],
    LATENCY_BUCKETS,
  );
  const ttft = new HistogramFamily(
    "mcpkit_gateway_time_to_first_token_seconds",
    "Time from request to the first streamed event, by route and provider",
    ["route", "provider"],
    LATENCY_BUCKETS,
  );
  const commitFamily = new HistogramFamily(
    "mcpkit_gateway_kv_commit_seconds",
    "Duration of the money path's KV commits",
    [],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
  );
  const commits = commitFamily.labels();
  const keys = new CollectedGaugeFamily(
    "mcpkit_gateway_provider_keys",
    "Provider keys by provider and state (healthy, cooling, refused, probing)",
    ["provider", "state"],
    () => {
      const counts = new Map<string, [Labels, number]>();
      for (const key of keyHealth()) {
        const id = `${key.provider}\u0000${key.state}`;
        const counted = counts.get(id);
        if (counted) counted[1]++;
        else counts.set(id, [{ provider: key.provider, state: key.state }, 1]);
      }
      return counts.values();
    },
  );
  const families = [requests, tokens, cost, latency, ttft, commitFamily, keys];
  // A series' label text is built once: the children of one route, model
  // and provider are looked up once and kept.
  const children = new Map<string, CallChildren>();
  const childrenOf = (route: string, model: string, provider: string) => {
    const id = `${route}\u0000${model}\u0000${provider}`;
    let found = children.get(id);
    if (!found) {
      found = {
        requests: new Map(),
        input: tokens.labels({ model, provider, kind: "input" }),
        output: tokens.labels({ model, provider, kind: "output" }),
        cached: tokens.labels({ model, provider, kind: "cached" }),
        cost: cost.labels({ model, provider }),
        latency: latency.labels({ route, provider }),
        ttft: ttft.labels({ route, provider }),
      };
      children.set(id, found);
    }
    return found;
  };
  return {
    observe(trace) {
      const model = trace.model ?? "";
      const provider = trace.provider ?? "";
      const series = childrenOf(trace.route, model, provider);
      let counted = series.requests.get(trace.status);
      if (!counted) {
        counted = requests.labels({
          route: trace.route,
          model,
          provider,
          status: String(trace.status),
        });
        series.requests.set(trace.status, counted);
      }
      counted.inc();
      if (trace.inputTokens > 0) series.input.inc(trace.inputTokens);
      if (trace.outputTokens > 0) series.output.inc(trace.outputTokens);
      if (trace.cachedTokens > 0) series.cached.inc(trace.cachedTokens);
      if (trace.costMicros > 0) series.cost.inc(trace.costMicros / 1_000_000);
      series.latency.observe(trace.latencyMs / 1000);
      if (trace.ttftMs !== undefined) {
        series.ttft.observe(trace.ttftMs / 1000);
      }
    },
    observeCommit(seconds) {
      commits.observe(seconds);
    },
    render() {
      return Promise.resolve({
        body: renderFamilies(families),
        contentType: PROMETHEUS_CONTENT_TYPE,
      });
    },
  };
}
