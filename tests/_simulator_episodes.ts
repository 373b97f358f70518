/**
 * Plays a computer-use episode against the simulator through each
 * provider's official SDK, on the wire a model's `computerUse` names, as a
 * harness would: answer every action with a screenshot until the model
 * says it is done. Returns the actions in order, as the wire names them.
 *
 * @module
 */

import Anthropic from "@anthropic-ai/sdk";
import type { BetaToolUnion } from "@anthropic-ai/sdk/resources/beta/messages/messages";
import {
  type Content,
  type Environment,
  GoogleGenAI,
  type Part,
} from "@google/genai";
import OpenAI from "openai";
import type { Tool as ResponsesTool } from "openai/resources/responses/responses";
import type { ComputerUse, Simulator } from "../gateway/simulator/mod.ts";
import { encodePng, toBase64 } from "./fixtures/png.ts";

/** The task every episode plays. */
export const TASK =
  'The screen is 1280x800. Click the text box at (412, 300), type "hi", then press Enter.';

/** How an episode went. */
export interface Episode {
  /** The actions, as the wire names them (`left_click`, `click`, `click_at`, …). */
  actions: string[];
  /** How many model turns carried actions. */
  turns: number;
  /** The final text. */
  final: string;
}

const MAX_TURNS = 12;

async function screenshot(): Promise<string> {
  return toBase64(await encodePng(1280, 800));
}

/**
 * The Claude tool entry for a computer-use tool type.
 *
 * @param type `computer_toolset_…` or `computer_…`.
 * @returns The `tools[]` entry.
 */
export function claudeTool(type: string): BetaToolUnion {
  const entry = type.startsWith("computer_toolset_") ? { type } : {
    type,
    name: "computer",
    display_width_px: 1280,
    display_height_px: 800,
  };
  return entry as unknown as BetaToolUnion;
}

/**
 * Plays Claude's wire: the toolset's member calls or the single tool's actions.
 *
 * @param sim The simulator.
 * @param model The upstream model id.
 * @param use The model's computer-use facts.
 * @param stream Whether to stream.
 * @returns The episode.
 */
export async function claudeEpisode(
  sim: Simulator,
  model: string,
  use: ComputerUse,
  stream: boolean,
): Promise<Episode> {
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
    maxRetries: 0,
  });
  const image = await screenshot();
  const messages: Anthropic.Beta.BetaMessageParam[] = [{
    role: "user",
    content: TASK,
  }];
  const episode: Episode = { actions: [], turns: 0, final: "" };
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const request = {
      model,
      max_tokens: 2048,
      betas: use.beta ? [use.beta] : [],
      tools: [claudeTool(use.tool)],
      messages,
    };
    const message = stream
      ? await client.beta.messages.stream(request).finalMessage()
      : await client.beta.messages.create(request);
    messages.push({ role: "assistant", content: message.content });
    const uses = message.content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) {
      const text = message.content.find((block) => block.type === "text");
      episode.final = text?.type === "text" ? text.text : "";
      return episode;
    }
    episode.turns += 1;
    for (const block of uses) {
      const input = block.input as { action?: string };
      episode.actions.push(input.action ?? block.name);
    }
    messages.push({
      role: "user",
      content: uses.map((block) => ({
        type: "tool_result" as const,
        tool_use_id: block.id,
        ...("toolset_name" in block && block.toolset_name
          ? { toolset_name: block.toolset_name }
          : {}),
        content: [{
          type: "image" as const,
          source: {
            type: "base64" as const,
            media_type: "image/png" as const,
            data: image,
          },
        }],
      })),
    });
  }
  throw new Error(`${model}: the episode did not end`);
}

/**
 * Plays OpenAI's wire: the GA `computer` tool's batched actions or the
 * preview tool's one action per call.
 *
 * @param sim The simulator.
 * @param model The upstream model id.
 * @param use The model's computer-use facts.
 * @param stream Whether to stream.
 * @returns The episode.
 */
export async function openaiEpisode(
  sim: Simulator,
  model: string,
  use: ComputerUse,
  stream: boolean,
): Promise<Episode> {
  const client = new OpenAI({
    baseURL: sim.baseUrls.openai,
    apiKey: "sk",
    maxRetries: 0,
  });
  const tool: ResponsesTool = use.tool === "computer" ? { type: "computer" } : {
    type: "computer_use_preview",
    display_width: 1280,
    display_height: 800,
    environment: "browser",
  };
  const image = `data:image/png;base64,${await screenshot()}`;
  const episode: Episode = { actions: [], turns: 0, final: "" };
  let previous: string | undefined;
  let input: OpenAI.Responses.ResponseInput | string = TASK;
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const request: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
      model,
      tools: [tool],
      input,
      truncation: "auto",
      previous_response_id: previous,
    };
    const response: OpenAI.Responses.Response = stream
      ? await client.responses.stream({ ...request, stream: true })
        .finalResponse()
      : await client.responses.create(request);
    const call = response.output.find((item) => item.type === "computer_call");
    if (call?.type !== "computer_call") {
      episode.final = response.output_text;
      return episode;
    }
    episode.turns += 1;
    const actions = call.actions ?? (call.action ? [call.action] : []);
    episode.actions.push(...actions.map((action) => action.type));
    previous = response.id;
    input = [{
      type: "computer_call_output",
      call_id: call.call_id,
      output: { type: "computer_screenshot", image_url: image },
    }];
  }
  throw new Error(`${model}: the episode did not end`);
}

/**
 * Plays Gemini's wire: `computerUse` with an environment, predefined
 * function calls answered with a screenshot.
 *
 * @param sim The simulator.
 * @param model The upstream model id.
 * @param use The model's computer-use facts.
 * @param stream Whether to stream.
 * @returns The episode.
 */
export async function geminiEpisode(
  sim: Simulator,
  model: string,
  use: ComputerUse,
  stream: boolean,
): Promise<Episode> {
  const ai = new GoogleGenAI({
    apiKey: "g-key",
    httpOptions: { baseUrl: sim.baseUrls.gemini },
  });
  const image = await screenshot();
  const contents: Content[] = [{ role: "user", parts: [{ text: TASK }] }];
  const config = {
    tools: [{
      computerUse: {
        environment: (use.environment ?? "ENVIRONMENT_BROWSER") as Environment,
      },
    }],
  };
  const episode: Episode = { actions: [], turns: 0, final: "" };
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    let parts: Part[] = [];
    if (stream) {
      for await (
        const chunk of await ai.models.generateContentStream({
          model,
          contents,
          config,
        })
      ) parts.push(...(chunk.candidates?.[0].content?.parts ?? []));
    } else {
      const response = await ai.models.generateContent({
        model,
        contents,
        config,
      });
      parts = response.candidates?.[0].content?.parts ?? [];
    }
    const calls = parts.flatMap((part) =>
      part.functionCall ? [part.functionCall] : []
    );
    if (calls.length === 0) {
      episode.final = parts.map((part) => part.text ?? "").join("");
      return episode;
    }
    episode.turns += 1;
    contents.push({ role: "model", parts });
    contents.push({
      role: "user",
      parts: calls.map((call) => ({
        functionResponse: {
          name: call.name,
          response: { url: "about:blank" },
          parts: [{ inlineData: { mimeType: "image/png", data: image } }],
        },
      })),
    });
    episode.actions.push(...calls.map((call) => call.name ?? ""));
  }
  throw new Error(`${model}: the episode did not end`);
}
