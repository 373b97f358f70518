/**
 * Model facts for simulator tests, in the catalog's field names: the
 * current wires of each provider (Claude's toolset and the older
 * versions with their betas, OpenAI's GA and preview computer tools,
 * Gemini's computer use with its environments) and a model of each
 * provider without computer use. Tests pass them as the simulator's
 * `models`, so they hold whatever the built-in catalog says.
 *
 * @module
 */

import type { SimulatedModel } from "../gateway/simulator/mod.ts";

const CLAUDE_SOURCES = [
  "https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool",
];
const OPENAI_SOURCES = [
  "https://developers.openai.com/api/docs/guides/tools-computer-use",
];
const GEMINI_SOURCES = ["https://ai.google.dev/gemini-api/docs/computer-use"];

/** The models, one per wire and one without computer use per provider. */
export const TEST_MODELS: readonly SimulatedModel[] = [
  {
    provider: "anthropic",
    upstream: "claude-opus-5-5",
    computerUse: { tool: "computer_toolset_20260801" },
    features: {
      disabledThinking: false,
      forcedToolChoice: false,
      thinkingBetweenTools: true,
    },
    sources: CLAUDE_SOURCES,
  },
  {
    provider: "anthropic",
    upstream: "claude-opus-4-5",
    computerUse: { tool: "computer_20251124", beta: "computer-use-2025-11-24" },
    sources: CLAUDE_SOURCES,
  },
  {
    provider: "anthropic",
    upstream: "claude-sonnet-4-5",
    computerUse: { tool: "computer_20250124", beta: "computer-use-2025-01-24" },
    sources: CLAUDE_SOURCES,
  },
  {
    provider: "anthropic",
    upstream: "claude-text-only",
    sources: CLAUDE_SOURCES,
  },
  {
    provider: "openai",
    upstream: "computer-use-preview",
    computerUse: { tool: "computer_use_preview" },
    sources: OPENAI_SOURCES,
  },
  {
    provider: "openai",
    upstream: "gpt-5.4",
    computerUse: { tool: "computer" },
    sources: OPENAI_SOURCES,
  },
  {
    provider: "openai",
    upstream: "gpt-4o",
    features: { forcedToolChoice: false },
    sources: OPENAI_SOURCES,
  },
  {
    provider: "gemini",
    upstream: "gemini-2.5-computer-use-preview-10-2025",
    computerUse: { tool: "computer_use", environment: "ENVIRONMENT_BROWSER" },
    sources: GEMINI_SOURCES,
  },
  {
    provider: "gemini",
    upstream: "gemini-cu-desktop",
    computerUse: {
      tool: "computer_use",
      environment: "ENVIRONMENT_BROWSER",
      environments: ["ENVIRONMENT_BROWSER", "ENVIRONMENT_DESKTOP"],
    },
    sources: GEMINI_SOURCES,
  },
  {
    provider: "gemini",
    upstream: "gemini-2.5-pro",
    sources: GEMINI_SOURCES,
  },
];
