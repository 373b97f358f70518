/**
 * The harness token: with `MCP_HARNESS_TOKEN` set, the setup and evaluate
 * hub dispatchers answer only requests whose `_meta.harness_token` equals it,
 * so an agent under evaluation, on the same connection, cannot set up or
 * score its own run.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
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
  // Hashes have one length, so the comparison takes the same time whatever was sent.
  return timingSafeEqual(digest(presented), digest(token));
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

function digest(text: string) {
  return createHash("sha256").update(text).digest();
}
