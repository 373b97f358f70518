/**
 * The one way the gateway turns a zod failure into words: the first issue,
 * its path written as in JavaScript (`messages[0].role`). Private to the
 * gateway.
 *
 * @module
 */
import type { z } from "zod";

/** The first issue of a failed parse: where, and what is wrong. */
export interface FirstIssue {
  /** The path, e.g. `messages[0].role`; empty for the value itself. */
  param: string;
  /** Zod's message for it. */
  message: string;
}

/**
 * Writes a zod path as JavaScript would: `messages[0].content[1]`.
 *
 * @example
 * ```ts
 * import { issuePath } from "./_zod.ts";
 *
 * issuePath(["messages", 0, "role"]); // "messages[0].role"
 * ```
 *
 * @param path The issue's path.
 * @returns The path as text; empty for the root.
 */
export function issuePath(path: readonly PropertyKey[]): string {
  return path.map((part) =>
    typeof part === "number" ? `[${part}]` : `.${String(part)}`
  ).join("").replace(/^\./, "");
}

/**
 * The first issue of a zod error.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { firstIssue } from "./_zod.ts";
 *
 * const parsed = z.object({ limit: z.number() }).safeParse({ limit: "x" });
 * if (!parsed.success) firstIssue(parsed.error).param; // "limit"
 * ```
 *
 * @param error A failed parse's error.
 * @returns Its path and message.
 */
export function firstIssue(
  error: Pick<z.ZodError, "issues"> | {
    issues: readonly { path: PropertyKey[]; message: string }[];
  },
): FirstIssue {
  const issue = error.issues[0];
  return { param: issuePath(issue.path), message: issue.message };
}
