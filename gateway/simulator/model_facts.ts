/**
 * What the simulator knows of a model, to refuse what the real API refuses:
 * the catalog's facts (`gateway/catalog.json`), found by the provider's own
 * model id. A model the catalog does not know (tests with ad-hoc ids) has no
 * facts, and the simulator stays lenient with it.
 *
 * @module
 */

import type { ProviderName } from "../upstream/providers/mod.ts";
import { catalogEntryByUpstream, DEFAULT_CATALOG } from "../state/catalog.ts";
import type { ComputerUse, ModelFeatures } from "../state/model_facts.ts";

/**
 * One model as the simulator reads it: where it is served and its facts, in
 * the catalog entry's fields (a `CatalogEntry` is one).
 */
export interface SimulatedModel {
  /** The provider that serves it. */
  provider: ProviderName;
  /** The provider's id for it. */
  upstream: string;
  /** Other ids the provider accepts for it. */
  aliases?: string[];
  /** How computer use is reached, for models that have it. */
  computerUse?: ComputerUse;
  /** What it refuses. */
  features?: ModelFeatures;
  /** The pages its facts were taken from: present once its facts are verified. */
  sources?: string[];
}

/**
 * Finds the facts of the model a request names.
 *
 * @param upstreamId The model id in the request.
 * @returns The model, or `undefined` when the catalog does not know it.
 */
export type ModelLookup = (upstreamId: string) => SimulatedModel | undefined;

/**
 * A lookup over the given models (default: the gateway's built-in catalog)
 * for one provider.
 *
 * @example
 * ```ts
 * import { modelLookup } from "./model_facts.ts";
 *
 * const lookup = modelLookup("anthropic", [{
 *   provider: "anthropic",
 *   upstream: "claude-test",
 *   computerUse: { tool: "computer_toolset_20260801" },
 * }]);
 * lookup("claude-test")?.computerUse?.tool; // "computer_toolset_20260801"
 * lookup("claude-other"); // undefined
 * ```
 *
 * @param provider The provider addressed.
 * @param models The models known (default: the built-in catalog).
 * @returns The lookup.
 */
export function modelLookup(
  provider: ProviderName,
  models: readonly SimulatedModel[] =
    DEFAULT_CATALOG as readonly SimulatedModel[],
): ModelLookup {
  return (upstreamId) => catalogEntryByUpstream(provider, upstreamId, models);
}

/**
 * Whether a model refuses a computer-use tool of this type: one whose facts
 * name another tool, or whose facts are verified (`sources`) and name none
 * (it has no computer use). A model without facts refuses nothing.
 *
 * @example
 * ```ts
 * import { refusesComputerTool } from "./model_facts.ts";
 *
 * const model = { provider: "openai", upstream: "gpt-test", computerUse: { tool: "computer" } } as const;
 * refusesComputerTool(model, "computer_use_preview"); // true
 * refusesComputerTool(model, "computer"); // false
 * refusesComputerTool(undefined, "computer"); // false
 * ```
 *
 * @param model The model's facts, if the catalog has them.
 * @param type The tool type the request declares.
 * @returns `true` when the real API would refuse the tool.
 */
export function refusesComputerTool(
  model: SimulatedModel | undefined,
  type: string,
): boolean {
  if (model === undefined) return false;
  if (model.computerUse) return model.computerUse.tool !== type;
  return (model.sources?.length ?? 0) > 0;
}
