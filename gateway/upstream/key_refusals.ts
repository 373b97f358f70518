/**
 * The pure rules of a provider's refusal of a key (401 or 403): whom it
 * blames, the key or the request, and how long a refused key cools down.
 * The key pool (`key_pool.ts`) carries them out.
 *
 * @module
 */

/** How many different callers' requests must get a 403 on one key before the key, not the requests, is blamed. */
export const FORBIDDEN_CALLERS_TO_REFUSE = 3;

/**
 * Whom a provider's refusal is about. A 401 is about the key. A 403 may be
 * about the request (moderation, a model or beta the account lacks): it is
 * the key's only once 403s came from {@linkcode FORBIDDEN_CALLERS_TO_REFUSE}
 * different callers since the key last answered, so no one caller, however
 * many requests it sends, can take a key out of service for everyone.
 *
 * @param status The upstream status, 401 or 403.
 * @param forbiddenCallers Different callers refused with a 403 on the key since it last answered, this one included.
 * @returns `"key"` (cool the key down, try another) or `"request"` (fail the call, leave the key alone).
 *
 * @example
 * ```ts
 * import { refusalBlame } from "./key_refusals.ts";
 *
 * refusalBlame(401, 0); // "key"
 * refusalBlame(403, 1); // "request"
 * ```
 */
export function refusalBlame(
  status: number,
  forbiddenCallers: number,
): "key" | "request" {
  if (status === 401) return "key";
  return forbiddenCallers >= FORBIDDEN_CALLERS_TO_REFUSE ? "key" : "request";
}

/**
 * The cool-down of a key the provider refused `refusals` times in a row: the
 * first cool-down, doubled with each refusal, up to the maximum.
 *
 * @param refusals Refusals in a row, this one included (at least 1).
 * @param baseMs The first cool-down, ms.
 * @param maxMs The longest cool-down, ms.
 * @returns The cool-down, ms.
 */
export function refusedCooldownMs(
  refusals: number,
  baseMs: number,
  maxMs: number,
): number {
  return Math.min(maxMs, baseMs * 2 ** (refusals - 1));
}
