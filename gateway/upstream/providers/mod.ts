/**
 * Every provider the gateway can call, by name. Adding a provider is adding
 * its file here and its models to `catalog.json`.
 *
 * @module
 */
import type { ProviderName } from "./provider.ts";
import { anthropic } from "./anthropic.ts";
import { gemini } from "./gemini.ts";
import { openai } from "./openai.ts";
import { openrouter } from "./openrouter.ts";
import type { Provider } from "./provider.ts";
import { xai } from "./xai.ts";

/** The providers, by the name the catalog uses. */
export const PROVIDERS: Readonly<Record<ProviderName, Provider>> = {
  openai,
  anthropic,
  gemini,
  xai,
  openrouter,
};
