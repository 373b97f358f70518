/**
 * The harness token: with `MCP_HARNESS_TOKEN` set, the setup and evaluate
 * hub dispatchers answer only requests whose `_meta.harness_token` equals it,
 * so an agent under evaluation, on the same connection, cannot set up or
 * score its own run.
 *
 * @module
 */
import type { CallToolResult } from "./_sdk.ts";

/**
 * Whether a request may use a harness-only tool.
 *
 * @param token The harness token; unset: everyone may.
 * @param extra The SDK's request context, whose `_meta` carries `harness_token`.
 * @returns `true` when no token is set or the request carries it.
 */
export function harnessAllowed(
  token: string | undefined,
  extra: { _meta?: Record<string, unknown> },
): boolean {
  if (!token) return true;
  const presented = extra._meta?.harness_token;
  if (typeof presented !== "string") return false;
  return constantTimeEqual(presented, token);
}

/**
 * The result a harness-only tool gives anyone else.
 *
 * @param hub The hub's name.
 * @returns An `isError` tool result that says what is required.
 */
export function harnessRefusal(hub: string): CallToolResult {
  return {
    isError: true,
    content: [{
      type: "text",
      text:
        `The "${hub}" hub answers only the evaluation harness: send _meta.harness_token`,
    }],
  };
}

const encoder = new TextEncoder();

/**
 * Compares two strings in time that depends on the expected one's length
 * only, not on where they differ. (No `node:crypto`: loading it cost a stdio
 * environment 15 ms of cold start.)
 */
export function constantTimeEqual(
  presented: string,
  expected: string,
): boolean {
  const a = encoder.encode(presented);
  const b = encoder.encode(expected);
  let difference = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) difference |= (a[i] ?? 0) ^ b[i];
  return difference === 0;
}
