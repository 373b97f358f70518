/**
 * The provider facts a catalog entry carries beside its price: how computer
 * use is reached on the model (the tool type as sent, the beta header, the
 * Gemini environment), its context window, the request features it refuses,
 * and the pages those facts were taken from. `catalog.ts` validates an entry
 * with these schemas; the gateway's translation, the simulator and the eval
 * runner read the facts from the catalog, never from a model name.
 *
 * @module
 */
import { z } from "zod";

/** The largest context window an entry may declare, tokens (models offer a few million at most). */
export const MAX_CONTEXT_WINDOW = 100_000_000;

/** The most pages one entry may cite. */
const MAX_SOURCES = 16;

/** The most Gemini environments one entry may list. */
const MAX_ENVIRONMENTS = 8;

/**
 * A provider's tool type as sent on the wire (`computer_toolset_20260801`,
 * `computer`, `computer_use_preview`, `computer_use`): lower-case words
 * joined by underscores, so a value can never carry markup or a header.
 */
const toolType = z.string().max(64).regex(
  /^[a-z][a-z0-9_]*$/,
  "expected a tool type such as computer_20251124 (lower case, digits, underscores)",
);

/** An `anthropic-beta` header value: lower-case words and digits joined by hyphens. */
const betaHeader = z.string().max(64).regex(
  /^[a-z0-9]+(-[a-z0-9]+)*$/,
  "expected an anthropic-beta value such as computer-use-2025-11-24",
);

/** A Gemini `ComputerUse.environment` enum value. */
const geminiEnvironment = z.string().max(64).regex(
  /^ENVIRONMENT_[A-Z_]+$/,
  "expected a Gemini environment such as ENVIRONMENT_BROWSER",
);

/** The schema of {@linkcode ComputerUse}. */
export const computerUseSchema: z.ZodType<ComputerUse> = z.strictObject({
  tool: toolType,
  beta: betaHeader.optional(),
  environment: geminiEnvironment.optional(),
  environments: z.array(geminiEnvironment).min(1).max(MAX_ENVIRONMENTS)
    .optional(),
}).superRefine((computerUse, context) => {
  const { environment, environments } = computerUse;
  if (environment && environments && !environments.includes(environment)) {
    context.addIssue({
      code: "custom",
      path: ["environment"],
      message: `expected one of "environments" (${environments.join(", ")})`,
    });
  }
});

/** The schema of {@linkcode ModelFeatures}. */
export const modelFeaturesSchema: z.ZodType<ModelFeatures> = z.strictObject({
  disabledThinking: z.boolean().optional(),
  forcedToolChoice: z.boolean().optional(),
  thinkingBetweenTools: z.boolean().optional(),
});

/** The schema of an entry's `sources`: the https pages its facts come from. */
export const sourcesSchema: z.ZodType<string[]> = z.array(
  z.url({ protocol: /^https$/, error: "expected an https URL" }).max(2048),
).min(1).max(MAX_SOURCES);

/** The schema of an entry's `contextWindow`. */
export const contextWindowSchema: z.ZodType<number> = z.number().int()
  .positive().max(MAX_CONTEXT_WINDOW);

/**
 * How computer use is reached on a model: what a harness sends, exactly.
 * `GET /v1/models` shows it as `computer_use`.
 */
export interface ComputerUse {
  /**
   * The provider's tool type, exactly as sent: Anthropic
   * `computer_toolset_20260801`, `computer_20251124` or `computer_20250124`;
   * OpenAI `computer` (GA) or `computer_use_preview`; Gemini `computer_use`
   * (the `computerUse` tool).
   */
  tool: string;
  /** The `anthropic-beta` header value the tool needs, when it needs one. */
  beta?: string;
  /** Gemini: the environment asked for when a scenario names none (`ENVIRONMENT_BROWSER`). */
  environment?: string;
  /** Gemini: every environment the model documents; a scenario may ask for any of them. */
  environments?: string[];
}

/**
 * What a model refuses. An absent field means the model accepts it; `false`
 * means the provider answers 400 to a request that uses it, so the gateway
 * answers first, naming the rule.
 */
export interface ModelFeatures {
  /** `false`: refuses `thinking: {type: "disabled"}` (chat: `reasoning_effort: "none"`). */
  disabledThinking?: boolean;
  /** `false`: refuses a forced tool choice (`any` or a named tool; chat: `required` or a named function). */
  forcedToolChoice?: boolean;
  /** `true`: text between tool calls arrives in thinking blocks, which must be sent back with the tool results. */
  thinkingBetweenTools?: boolean;
}
