/**
 * OpenRouter: the OpenAI chat-completions convention, passed through. The
 * `HTTP-Referer` and `X-Title` headers identify the gateway in OpenRouter's
 * app rankings. OpenTelemetry's GenAI conventions list no value for it, so
 * its telemetry name is its own.
 *
 * @module
 */
import { openAICompatible } from "./openai_compatible.ts";
import type { Provider } from "./provider.ts";

/**
 * The OpenRouter provider.
 *
 * @example
 * ```ts
 * import { openrouter } from "./openrouter.ts";
 *
 * openrouter.headers("sk-or-1")["x-title"]; // "mcpkit gateway"
 * ```
 */
export const openrouter: Provider<"openrouter"> = openAICompatible({
  name: "openrouter",
  defaultBaseUrl: "https://openrouter.ai/api/v1",
  headers: {
    "http-referer": "https://jsr.io/@org/mcpkit",
    "x-title": "mcpkit gateway",
  },
  // "403: Your chosen model requires moderation and your input was flagged"
  // (https://openrouter.ai/docs/api/reference/errors-and-debugging): the
  // caller's input, not the key.
  requestRefusals: [/\binput was flagged\b/i],
  // OpenRouter's usage accounting reports what it billed in `usage.cost`
  // (plugins, web results, provider surcharges): never charged less.
  reportsCost: true,
});
