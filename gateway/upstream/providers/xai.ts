/**
 * xAI: the OpenAI chat-completions convention, passed through.
 *
 * @module
 */
import { openAICompatible } from "./openai_compatible.ts";
import type { Provider } from "./provider.ts";

/**
 * The xAI provider.
 *
 * @example
 * ```ts
 * import { xai } from "./xai.ts";
 *
 * xai.defaultBaseUrl; // "https://api.x.ai/v1"
 * xai.otelName; // "x_ai"
 * ```
 */
export const xai: Provider<"xai"> = openAICompatible({
  name: "xai",
  defaultBaseUrl: "https://api.x.ai/v1",
  otelName: "x_ai",
  // xAI reports reasoning tokens beside completion_tokens, not inside them.
  reasoningOutsideCompletion: true,
  // xAI's chat reference names `max_completion_tokens` (`max_tokens` is deprecated there).
  outputLimitField: "max_completion_tokens",
});
