/**
 * OpenRouter: the OpenAI chat-completions convention, passed through. The
 * `HTTP-Referer` and `X-Title` headers identify the gateway in OpenRouter's
 * app rankings.
 *
 * @module
 */
import { chatPassthrough } from "./openai.ts";
import { nestedErrorMessage, type Provider } from "./provider.ts";

/** The OpenRouter provider. */
export const openrouter: Provider = {
  name: "openrouter",
  headers: (secret) => ({
    authorization: `Bearer ${secret}`,
    "http-referer": "https://jsr.io/@org/mcpkit",
    "x-title": "mcpkit gateway",
  }),
  exchange: chatPassthrough,
  errorMessage: nestedErrorMessage,
};
