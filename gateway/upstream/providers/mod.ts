/**
 * The provider registry: every provider the gateway can call, in the order
 * they are listed and configured. Each provider's file declares everything
 * about it (name, default base URL, telemetry name, upstream wire, image
 * rule, headers, exchange, error message); everything else that knows the
 * providers derives from the list below: {@linkcode ProviderName}, the
 * configuration's schema and environment variables, the catalog's provider
 * names, the telemetry names, the simulator's mounts and the image rules.
 *
 * Adding a provider is writing its file (for an OpenAI-compatible one, a
 * call to `openAICompatible()` in `openai_compatible.ts`), adding it to
 * {@linkcode REGISTERED_PROVIDERS}, and adding its models to `catalog.json`.
 *
 * @example
 * ```ts
 * import { PROVIDER_NAMES, PROVIDERS } from "./mod.ts";
 *
 * PROVIDER_NAMES; // ["openai", "anthropic", "gemini", "xai", "openrouter"]
 * PROVIDERS.xai.defaultBaseUrl; // "https://api.x.ai/v1"
 * ```
 *
 * @module
 */
import { anthropic } from "./anthropic.ts";
import { gemini } from "./gemini.ts";
import { openai } from "./openai.ts";
import { openrouter } from "./openrouter.ts";
import type { Provider } from "./provider.ts";
import { xai } from "./xai.ts";

/**
 * The registered providers, in order: the one list a new provider is added
 * to. Everything else derives from it.
 *
 * @example
 * ```ts
 * import { REGISTERED_PROVIDERS } from "./mod.ts";
 *
 * REGISTERED_PROVIDERS.map((provider) => provider.wire);
 * // ["openai", "anthropic", "gemini", "openai", "openai"]
 * ```
 */
export const REGISTERED_PROVIDERS = [
  openai,
  anthropic,
  gemini,
  xai,
  openrouter,
] as const;

/** The name of a registered provider (`"openai"`, `"anthropic"`, …). */
export type ProviderName = (typeof REGISTERED_PROVIDERS)[number]["name"];

/**
 * The registered providers' names, in order: the order the configuration
 * lists them and warns about missing keys in.
 *
 * @example Every provider's key variable
 * ```ts
 * import { PROVIDER_NAMES } from "./mod.ts";
 *
 * PROVIDER_NAMES.map((name) => `${name.toUpperCase()}_API_KEYS`);
 * // ["OPENAI_API_KEYS", "ANTHROPIC_API_KEYS", "GEMINI_API_KEYS", "XAI_API_KEYS", "OPENROUTER_API_KEYS"]
 * ```
 */
export const PROVIDER_NAMES: readonly [ProviderName, ...ProviderName[]] =
  REGISTERED_PROVIDERS.map((provider) => provider.name) as [
    ProviderName,
    ...ProviderName[],
  ];

/**
 * The providers by name.
 *
 * @example
 * ```ts
 * import { PROVIDERS } from "./mod.ts";
 *
 * PROVIDERS.anthropic.headers("sk-ant-1"); // { "x-api-key": "sk-ant-1" }
 * ```
 */
export const PROVIDERS: Readonly<Record<ProviderName, Provider<ProviderName>>> =
  Object.freeze(
    Object.fromEntries(
      REGISTERED_PROVIDERS.map((provider) => [provider.name, provider]),
    ) as Record<ProviderName, Provider<ProviderName>>,
  );

/**
 * A provider's `gen_ai.provider.name` in OpenTelemetry's GenAI semantic
 * conventions, for the spans of calls it served.
 *
 * @example
 * ```ts
 * import { otelProviderName } from "./mod.ts";
 *
 * otelProviderName("gemini"); // "gcp.gemini"
 * otelProviderName("xai"); // "x_ai"
 * ```
 *
 * @param name The provider.
 * @returns The attribute's value.
 */
export function otelProviderName(name: ProviderName): string {
  return PROVIDERS[name].otelName;
}
