/**
 * What the runner reads about a model from the gateway's `GET /v1/models`:
 * the wire convention from its routes (`messages` → Anthropic Messages;
 * else `responses` alone → Responses; else `gemini` alone → Gemini native;
 * else chat completions; a model with computer use is spoken to on its
 * provider's native route whenever it has one, since no provider offers
 * computer use over chat), and how its computer use is reached
 * (`computer_use`: the tool type, beta header, environment) and what it
 * refuses (`features`). The agents pick their wire from these facts, never
 * from the model's name, so a model an operator adds with a `computer_use`
 * entry is driven with no code change.
 *
 * @module
 */
import { isObject } from "./loop.ts";
import {
  type ComputerUseWire,
  type Convention,
  CONVENTIONS,
  type ModelFacts,
  type ModelFeatures,
} from "./model.ts";

/**
 * The convention for a model served on these routes.
 *
 * @example
 * ```ts
 * import { conventionForRoutes } from "./convention.ts";
 * conventionForRoutes(["responses"]); // "responses"
 * conventionForRoutes(["chat", "responses"]); // "chat"
 * ```
 *
 * @param routes The model's routes.
 * @returns The convention.
 */
export function conventionForRoutes(routes: readonly string[]): Convention {
  if (routes.includes("messages")) return "messages";
  const only = (route: string) => routes.length === 1 && routes[0] === route;
  if (only("responses")) return "responses";
  if (only("gemini")) return "gemini";
  return "chat";
}

/**
 * Reads a `--convention` value.
 *
 * @example
 * ```ts
 * import { parseConvention } from "./convention.ts";
 *
 * parseConvention("messages"); // "messages"
 * // parseConvention("anthropic") throws: Unknown convention "anthropic": use chat, messages, responses, gemini
 * ```
 *
 * @param value What the user typed.
 * @returns The convention.
 * @throws {TypeError} When it is none of them.
 */
export function parseConvention(value: string): Convention {
  const found = CONVENTIONS.find((convention) => convention === value);
  if (!found) {
    throw new TypeError(
      `Unknown convention "${value}": use ${CONVENTIONS.join(", ")}`,
    );
  }
  return found;
}

/**
 * What a `GET /v1/models` entry says about its model: the convention from its
 * routes (chat when it lists none), `computer_use` and `features`. Fields of
 * the wrong type are left out, so a gateway's mistake costs the native wire,
 * never the run.
 *
 * @example
 * ```ts
 * import { modelFacts } from "./convention.ts";
 *
 * modelFacts({
 *   id: "claude-opus-5-5",
 *   routes: ["chat", "messages"],
 *   computer_use: { tool: "computer_toolset_20260801" },
 *   features: { forced_tool_choice: false },
 * });
 * // { convention: "messages", computerUse: { tool: "computer_toolset_20260801" },
 * //   features: { forcedToolChoice: false } }
 * ```
 *
 * @param entry One entry of `data`, or `GET /v1/models/{id}`'s body.
 * @returns The facts.
 */
export function modelFacts(entry: unknown): ModelFacts {
  const info = isObject(entry) ? entry : {};
  const routes = Array.isArray(info.routes)
    ? info.routes.filter((r): r is string => typeof r === "string")
    : [];
  const computerUse = computerUseWire(info.computer_use);
  const features = modelFeatures(info.features);
  const native = computerUse && NATIVE_ROUTES.find((r) => routes.includes(r));
  return {
    convention: native ??
      (routes.length > 0 ? conventionForRoutes(routes) : "chat"),
    ...(computerUse && { computerUse }),
    ...(features && { features }),
  };
}

/** The routes computer use is spoken on, in the order a model's routes are tried. */
const NATIVE_ROUTES: readonly Convention[] = [
  "messages",
  "responses",
  "gemini",
];

function computerUseWire(value: unknown): ComputerUseWire | undefined {
  if (!isObject(value) || typeof value.tool !== "string" || !value.tool) {
    return undefined;
  }
  const environments = Array.isArray(value.environments)
    ? value.environments.filter((e): e is string => typeof e === "string")
    : [];
  return {
    tool: value.tool,
    ...(typeof value.beta === "string" && value.beta && { beta: value.beta }),
    ...(typeof value.environment === "string" && value.environment &&
      { environment: value.environment }),
    ...(environments.length > 0 && { environments }),
  };
}

const FEATURE_FIELDS: Record<string, keyof ModelFeatures> = {
  disabled_thinking: "disabledThinking",
  forced_tool_choice: "forcedToolChoice",
  thinking_between_tools: "thinkingBetweenTools",
};

function modelFeatures(value: unknown): ModelFeatures | undefined {
  if (!isObject(value)) return undefined;
  const features: ModelFeatures = {};
  for (const [wire, name] of Object.entries(FEATURE_FIELDS)) {
    if (typeof value[wire] === "boolean") features[name] = value[wire];
  }
  return Object.keys(features).length > 0 ? features : undefined;
}

/**
 * Facts as `GET /v1/models` spells them (`computer_use`, `features` in
 * snake case): what a recording keeps, so a replay drives the same wire.
 *
 * @example
 * ```ts
 * import { modelFacts, wireFacts } from "./convention.ts";
 *
 * const wire = wireFacts({
 *   convention: "messages",
 *   computerUse: { tool: "computer_toolset_20260801" },
 *   features: { forcedToolChoice: false },
 * });
 * // { computer_use: { tool: "computer_toolset_20260801" }, features: { forced_tool_choice: false } }
 * modelFacts({ routes: ["messages"], ...wire }).features; // { forcedToolChoice: false }
 * ```
 *
 * @param facts The facts.
 * @returns Their `computer_use` and `features`, where set.
 */
export function wireFacts(
  facts: Pick<ModelFacts, "computerUse" | "features">,
): { computer_use?: ComputerUseWire; features?: Record<string, boolean> } {
  const features = Object.entries(FEATURE_FIELDS).flatMap(([wire, name]) =>
    facts.features?.[name] === undefined ? [] : [[wire, facts.features[name]]]
  );
  return {
    ...(facts.computerUse && { computer_use: { ...facts.computerUse } }),
    ...(features.length > 0 && { features: Object.fromEntries(features) }),
  };
}

/**
 * Asks the gateway's `GET /v1/models` what it says about a model; a gateway
 * that does not list the model gets chat and no computer use.
 *
 * @example
 * ```ts ignore
 * import { fetchModelFacts } from "./convention.ts";
 *
 * const facts = await fetchModelFacts("http://localhost:8080", "claude-opus-5-5");
 * facts.computerUse?.tool; // "computer_toolset_20260801" where the catalog says so
 * ```
 *
 * @param gatewayUrl The gateway's base URL.
 * @param model The model id.
 * @param signal Stops the request.
 * @returns The facts.
 * @throws {Error} When the gateway cannot be reached.
 */
export async function fetchModelFacts(
  gatewayUrl: string,
  model: string,
  signal?: AbortSignal,
): Promise<ModelFacts> {
  const response = await fetch(`${gatewayUrl.replace(/\/$/, "")}/v1/models`, {
    signal,
  });
  if (!response.ok) {
    await response.body?.cancel();
    return { convention: "chat" };
  }
  const body = await response.json().catch(() => undefined);
  const data = isObject(body) && Array.isArray(body.data) ? body.data : [];
  return modelFacts(data.find((m) => isObject(m) && m.id === model));
}
