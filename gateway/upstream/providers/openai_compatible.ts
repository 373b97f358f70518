/**
 * Providers that speak OpenAI's Chat Completions convention (xAI,
 * OpenRouter, and most hosted open-model APIs), built in a few lines: the
 * chat route is passed through with {@linkcode chatPassthrough}, the key goes
 * in a Bearer `authorization` header, and errors are read in the shared
 * `{error:{message}}` shape.
 *
 * @module
 */
import { chatPassthrough, type OutputLimitField } from "./openai.ts";
import {
  type ImageRule,
  nestedErrorMessage,
  type Provider,
} from "./provider.ts";

/** What sets one OpenAI-compatible provider apart. */
export interface OpenAICompatibleOptions<Name extends string> {
  /** The provider's name, as in the catalog (lower case; it prefixes the environment variables in upper case). */
  name: Name;
  /** The upstream base URL, the one its docs give the OpenAI SDK (ending before `/chat/completions`). */
  defaultBaseUrl: string;
  /** Its `gen_ai.provider.name` in OpenTelemetry's GenAI conventions; default `name`. */
  otelName?: string;
  /** How images are billed on its models; default `dearest`, the highest of the published rules. */
  imageRule?: ImageRule;
  /** Fixed headers sent with every request beside the key. */
  headers?: Readonly<Record<string, string>>;
  /** The provider reports reasoning tokens beside `completion_tokens`, not inside them (xAI). */
  reasoningOutsideCompletion?: boolean;
  /** Wordings of a 429 or 403 about the request, not the key (`Provider.requestRefusals`). */
  requestRefusals?: readonly RegExp[];
  /** It reports what a call cost in `usage.cost`, USD (OpenRouter): the caller is charged at least that. */
  reportsCost?: boolean;
  /** The field its chat API reads as the output limit, sent when the caller sets none; default `max_tokens`. */
  outputLimitField?: OutputLimitField;
}

/**
 * A provider that speaks OpenAI's Chat Completions convention on the chat
 * route, passed through with the model id swapped for the upstream one and
 * usage read from the chat `usage` object.
 *
 * @example A provider in three lines
 * ```ts
 * import { openAICompatible } from "./openai_compatible.ts";
 *
 * export const acme = openAICompatible({
 *   name: "acme",
 *   defaultBaseUrl: "https://api.acme.example/v1",
 * });
 * acme.headers("sk-1"); // { authorization: "Bearer sk-1" }
 * ```
 *
 * @typeParam Name The provider's name, a string literal.
 * @param options What sets the provider apart.
 * @returns The provider, ready for the registry's list in `mod.ts`.
 */
export function openAICompatible<const Name extends string>(
  options: OpenAICompatibleOptions<Name>,
): Provider<Name> {
  const fixedHeaders = { ...options.headers };
  const passOptions = {
    reasoningOutsideCompletion: options.reasoningOutsideCompletion === true,
    outputLimitField: options.outputLimitField ?? "max_tokens",
    reportsCost: options.reportsCost === true,
  };
  return {
    name: options.name,
    defaultBaseUrl: options.defaultBaseUrl,
    otelName: options.otelName ?? options.name,
    wire: "openai",
    imageRule: options.imageRule ?? "dearest",
    headers: (secret) => ({
      ...fixedHeaders,
      authorization: `Bearer ${secret}`,
    }),
    exchange: (call) => chatPassthrough(call, passOptions),
    errorMessage: nestedErrorMessage,
    ...(options.requestRefusals
      ? { requestRefusals: options.requestRefusals }
      : {}),
  };
}
