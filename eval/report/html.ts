/**
 * What every part of the eval report uses to write HTML: escaping (every
 * string a result carries was written by a model or an environment), number
 * and JSON formatting, and a run's status.
 *
 * @module
 */
import type { EvalResult } from "../run/result.ts";

/**
 * Escapes text for HTML (element content and quoted attributes).
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./html.ts";
 * escapeHtml(`<img src=x onerror="alert(1)">`);
 * // "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
 * ```
 *
 * @param value Anything; non-strings are turned into text first.
 * @returns The escaped text.
 */
export function escapeHtml(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) =>
    ({
      "&": "&amp;",
      "<": "&lt;",
      ">": "&gt;",
      '"': "&quot;",
      "'": "&#39;",
    })[c]!);
}

export const esc = escapeHtml;

export function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

export function usd(value: unknown): string {
  return `$${num(value).toFixed(6)}`;
}

export function json(value: unknown): string {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** Whether a run has a reward (an errored run has none: it is not a zero). */
export function isScored(result: EvalResult): boolean {
  return !result.error && typeof result.reward === "number" &&
    Number.isFinite(result.reward);
}

export type Status = "passed" | "partial" | "failed" | "errored";

export function statusOf(result: EvalResult): Status {
  if (result.error) return "errored";
  const reward = num(result.reward);
  if (reward >= 1) return "passed";
  return reward > 0 ? "partial" : "failed";
}
