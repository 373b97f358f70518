/**
 * What an agent loop did, step by step, as the report shows it: the prompt,
 * then per model call the model's text, its tool calls with their arguments
 * and results (screenshots included), refusals and safety checks, the
 * call's tokens and cost. Every loop fills one in as it goes (see
 * {@linkcode traceToolCall}), so a run that fails keeps what happened
 * before the failure.
 *
 * @module
 */
import type { PromptMessage } from "../tool_host.ts";

/** An image of a trajectory: inline (base64), or stored as a file named by its SHA-256. */
export type TrajectoryImage =
  | { mimeType: string; data: string }
  | { mimeType: string; sha256: string; bytes: number };

/** A tool's answer as the trajectory keeps it. */
export interface TrajectoryToolResult {
  /** Its text (capped as the model saw it). */
  text: string;
  /** Its images. */
  images: TrajectoryImage[];
  /** Whether the tool (or the gate) answered with an error. */
  is_error: boolean;
}

/** One tool call of a model turn. */
export interface TrajectoryToolCall {
  /** The name the model called. */
  name: string;
  /** The arguments as the model sent them. */
  arguments: unknown;
  /** The answer (absent when the run failed during the call). */
  result?: TrajectoryToolResult;
  /** Set when the agent was not given this tool: refused, never run. */
  refused?: boolean;
  /** Safety checks the call raised and the runner acknowledged. */
  safety_checks?: { id: string; code?: string; message?: string }[];
}

/** One model call and what followed it. */
export interface TrajectoryStep {
  /** Its number, from 1. */
  step: number;
  /** The HTTP status the model call answered with. */
  status: number;
  /** The model's text (empty when it only called tools). */
  text: string;
  /** The tool calls it made, in order, with their results. */
  tool_calls: TrajectoryToolCall[];
  /** Tokens of this call. */
  tokens: { input: number; output: number };
  /** What the gateway charged for this call, USD (0 in a replay). */
  cost_usd: number;
  /** Set when the answer came from a recording, not the gateway. */
  replayed?: boolean;
}

/** A prompt message as the trajectory keeps it. */
export interface TrajectoryPrompt {
  /** `user` or `assistant`. */
  role: string;
  /** Its text, when it is text. */
  text?: string;
  /** Its image, when it is one. */
  image?: TrajectoryImage;
}

/** A run of the agent loop, step by step. */
export interface Trajectory {
  /** The scenario's prompt. */
  prompt: TrajectoryPrompt[];
  /** The model calls. */
  steps: TrajectoryStep[];
}

/**
 * An empty trajectory.
 *
 * @returns No prompt, no steps.
 */
export function emptyTrajectory(): Trajectory {
  return { prompt: [], steps: [] };
}

/**
 * The scenario's prompt messages as the trajectory keeps them.
 *
 * @example
 * ```ts
 * import { trajectoryPrompt } from "./trajectory.ts";
 * trajectoryPrompt([{ role: "user", content: { type: "text", text: "Hi" } }]);
 * // [{ role: "user", text: "Hi" }]
 * ```
 *
 * @param messages The MCP prompt messages.
 * @returns One entry per message.
 */
export function trajectoryPrompt(
  messages: PromptMessage[],
): TrajectoryPrompt[] {
  return messages.map((message) => {
    const { content } = message;
    if (
      content.type === "image" && typeof content.data === "string" &&
      typeof content.mimeType === "string"
    ) {
      return {
        role: message.role,
        image: { mimeType: content.mimeType, data: content.data },
      };
    }
    if (content.type === "text") {
      return { role: message.role, text: String(content.text ?? "") };
    }
    const resource = content.resource as { text?: unknown } | undefined;
    return {
      role: message.role,
      text: typeof resource?.text === "string"
        ? resource.text
        : JSON.stringify(content),
    };
  });
}
