/**
 * The few Prometheus metric types the gateway exports (counters, histograms,
 * one gauge read at each scrape) and their text exposition (format 0.0.4),
 * written out as `prom-client` writes them. Our own because `prom-client`
 * brought 19 MiB of resident memory at rest (its Node.js compatibility
 * modules and registry) for a dozen series.
 *
 * @module
 */

/** The content type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE =
  "text/plain; version=0.0.4; charset=utf-8";

/** Label names and values of one series, in the family's label order. */
export type Labels = Record<string, string>;

/** A metric family that can write its exposition. */
export interface Family {
  /** Appends `# HELP`, `# TYPE` and the series' lines. */
  write(lines: string[]): void;
}

function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => c === "\n" ? "\\n" : `\\${c}`);
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "Nan";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return String(value);
}

function labelText(names: readonly string[], labels: Labels): string {
  return names.map((name) => `${name}="${escapeLabel(labels[name] ?? "")}"`)
    .join(",");
}

function header(lines: string[], name: string, help: string, type: string) {
  lines.push(
    `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`,
  );
  lines.push(`# TYPE ${name} ${type}`);
}

/** One counter series: add to it. */
export interface CounterSeries {
  /** Adds `amount` (1 by default). */
  inc(amount?: number): void;
}

/**
 * A counter family; a series appears in the exposition once it is first
 * incremented.
 */
export class CounterFamily implements Family {
  #series = new Map<string, { labels: string; value: number }>();

  /**
   * @param name The metric name.
   * @param help Its help text.
   * @param labelNames Its label names, in exposition order.
   */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  /**
   * The series of `labels`, to keep and increment without looking it up again.
   *
   * @param labels A value for each label name.
   * @returns The series.
   */
  labels(labels: Labels): CounterSeries {
    const text = labelText(this.labelNames, labels);
    const series = this.#series;
    return {
      inc(amount = 1) {
        const found = series.get(text);
        if (found) found.value += amount;
        else series.set(text, { labels: text, value: amount });
      },
    };
  }

  write(lines: string[]): void {
    header(lines, this.name, this.help, "counter");
    for (const { labels, value } of this.#series.values()) {
      lines.push(`${this.name}{${labels}} ${formatValue(value)}`);
    }
  }
}

/** One histogram series: observe into it. */
export interface HistogramSeries {
  /** Counts one observation. */
  observe(value: number): void;
}

interface HistogramState {
  labels: string;
  /** Observations per bucket (not cumulative), one more for +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram family; a labelled series appears once first observed, the
 * series of a family without labels is there from the start.
 */
export class HistogramFamily implements Family {
  #series = new Map<string, HistogramState>();

  /**
   * @param name The metric name.
   * @param help Its help text.
   * @param labelNames Its label names, in exposition order.
   * @param buckets The upper bounds, ascending.
   */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    if (labelNames.length === 0) this.#stateOf("");
  }

  #stateOf(text: string): HistogramState {
    let state = this.#series.get(text);
    if (!state) {
      state = {
        labels: text,
        counts: new Array(this.buckets.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.#series.set(text, state);
    }
    return state;
  }

  /**
   * The series of `labels`, to keep and observe into.
   *
   * @param labels A value for each label name.
   * @returns The series.
   */
  labels(labels: Labels = {}): HistogramSeries {
    const text = labelText(this.labelNames, labels);
    const buckets = this.buckets;
    let state: HistogramState | undefined;
    return {
      observe: (value) => {
        state ??= this.#stateOf(text);
        let i = 0;
        while (i < buckets.length && value > buckets[i]) i++;
        state.counts[i]++;
        state.sum += value;
        state.count++;
      },
    };
  }

  write(lines: string[]): void {
    header(lines, this.name, this.help, "histogram");
    for (const { labels, counts, sum, count } of this.#series.values()) {
      const rest = labels ? `,${labels}` : "";
      const own = labels ? `{${labels}}` : "";
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += counts[i];
        lines.push(
          `${this.name}_bucket{le="${
            formatValue(this.buckets[i])
          }"${rest}} ${cumulative}`,
        );
      }
      lines.push(`${this.name}_bucket{le="+Inf"${rest}} ${count}`);
      lines.push(`${this.name}_sum${own} ${formatValue(sum)}`);
      lines.push(`${this.name}_count${own} ${count}`);
    }
  }
}

/** A gauge family whose series are read at each scrape. */
export class CollectedGaugeFamily implements Family {
  /**
   * @param name The metric name.
   * @param help Its help text.
   * @param labelNames Its label names, in exposition order.
   * @param collect Reads the series' values now.
   */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly collect: () => Iterable<[Labels, number]>,
  ) {}

  write(lines: string[]): void {
    header(lines, this.name, this.help, "gauge");
    for (const [labels, value] of this.collect()) {
      lines.push(
        `${this.name}{${labelText(this.labelNames, labels)}} ${
          formatValue(value)
        }`,
      );
    }
  }
}

/**
 * The exposition of `families`, in order, each followed by a blank line but
 * the last.
 *
 * @param families The metric families.
 * @returns The text exposition.
 */
export function renderFamilies(families: readonly Family[]): string {
  return families.map((family) => {
    const lines: string[] = [];
    family.write(lines);
    return lines.join("\n");
  }).join("\n\n") + "\n";
}
