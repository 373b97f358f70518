/**
 * xAI: the OpenAI chat-completions convention, passed through.
 *
 * @module
 */
import { chatPassthrough } from "./openai.ts";
import { nestedErrorMessage, type Provider } from "./provider.ts";

/** The xAI provider. */
export const xai: Provider = {
  name: "xai",
  headers: (secret) => ({ authorization: `Bearer ${secret}` }),
  // xAI reports reasoning tokens beside completion_tokens, not inside them.
  exchange: (call) =>
    chatPassthrough(call, { reasoningOutsideCompletion: true }),
  errorMessage: nestedErrorMessage,
};
