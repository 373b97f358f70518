/**
 * The environment as an agent loop sees it: the tools it was given
 * ({@linkcode agentTools}), the prompt it got, what a tool call answers
 * ({@linkcode ToolResult}, capped by {@linkcode capToolContent}), the screen
 * size, and the {@linkcode ToolHost} that runs the calls. Environments
 * produce these, the agent loops consume them; neither imports the other.
 *
 * @module
 */
import { globMatch } from "../mcp/scenarios/scenario.ts";

/**
 * Text of one tool result the model sees at most, bytes (UTF-8), by default.
 *
 * @example
 * ```ts
 * import { capToolContent, DEFAULT_MAX_TOOL_RESULT_BYTES } from "./tool_host.ts";
 *
 * capToolContent([{ type: "text", text: "ok" }], {
 *   maxBytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
 *   maxImages: 4,
 * }).text; // "ok"
 * ```
 */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = 100_000;

/**
 * Images of one tool result the model sees at most, by default.
 *
 * @example
 * ```ts
 * import { capToolContent, DEFAULT_MAX_TOOL_RESULT_IMAGES } from "./tool_host.ts";
 *
 * const screenshot = { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" };
 * capToolContent(Array(6).fill(screenshot), {
 *   maxBytes: 100_000,
 *   maxImages: DEFAULT_MAX_TOOL_RESULT_IMAGES,
 * }).images.length; // 4
 * ```
 */
export const DEFAULT_MAX_TOOL_RESULT_IMAGES = 4;

/**
 * One image's size at most, bytes (what Anthropic accepts per image).
 *
 * @example
 * ```ts
 * import { capToolContent, MAX_IMAGE_BYTES } from "./tool_host.ts";
 *
 * const huge = "A".repeat(Math.ceil(MAX_IMAGE_BYTES * 4 / 3) + 4);
 * const { text, images } = capToolContent(
 *   [{ type: "image", mimeType: "image/png", data: huge }],
 *   { maxBytes: 1000, maxImages: 4 },
 * );
 * images.length; // 0
 * text.startsWith("[an image of"); // true
 * ```
 */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** A screen size, pixels. */
export interface DisplaySize {
  /** Width. */
  width: number;
  /** Height. */
  height: number;
}

/**
 * The size the runner tells environments when none is given.
 *
 * @example
 * ```ts
 * import { DEFAULT_DISPLAY } from "./tool_host.ts";
 *
 * `${DEFAULT_DISPLAY.width}x${DEFAULT_DISPLAY.height}`; // "1280x800"
 * ```
 */
export const DEFAULT_DISPLAY: DisplaySize = { width: 1280, height: 800 };

/** A tool the agent may be given. */
export interface AgentTool {
  /** Tool name. */
  name: string;
  /** What it does. */
  description?: string;
  /** JSON Schema of its arguments. */
  inputSchema: Record<string, unknown>;
}

/** A prompt message, as MCP sends it. */
export interface PromptMessage {
  /** `user` or `assistant`. */
  role: string;
  /** One content item. */
  content: Record<string, unknown>;
}

/** An image a tool answered with. */
export interface ToolImage {
  /** Its type, e.g. `image/png`. */
  mimeType: string;
  /** Its bytes, base64. */
  data: string;
}

/** A tool's answer as an agent passes it to the model. */
export interface ToolResult {
  /** Its text (capped; a cut is marked in the text). */
  text: string;
  /** Its images (at most the cap). */
  images: ToolImage[];
  /** Whether the tool (or the gate) answered with an error. */
  isError: boolean;
}

/** What runs the tools: the environment, as the agent loops see it. */
export interface ToolHost {
  /**
   * Calls a tool. An error the model can act on (bad arguments) is a result
   * with `isError`; a time-out or a broken environment throws.
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<ToolResult>;
}

/**
 * The tools an agent gets: none whose name starts with `_` (harness tools),
 * none matching `exclude`, and only those matching `allowed` when given.
 *
 * @example
 * ```ts
 * import { agentTools } from "./tool_host.ts";
 *
 * const tools = ["_hud_submit", "setup", "bash", "computer"].map((name) => ({
 *   name,
 *   inputSchema: { type: "object" },
 * }));
 * agentTools(tools, ["setup"]).map((tool) => tool.name); // ["bash", "computer"]
 * agentTools(tools, [], ["comp*"]).map((tool) => tool.name); // ["computer"]
 * ```
 *
 * @param tools The environment's tools.
 * @param exclude Glob patterns to leave out.
 * @param allowed Glob patterns to keep, if any.
 * @returns The agent's tools.
 */
export function agentTools(
  tools: AgentTool[],
  exclude: string[] = [],
  allowed?: string[],
): AgentTool[] {
  return tools.filter((tool) =>
    !tool.name.startsWith("_") &&
    !exclude.some((pattern) => globMatch(tool.name, pattern)) &&
    (!allowed || allowed.some((pattern) => globMatch(tool.name, pattern)))
  );
}

/**
 * A tool's MCP content as the model gets it: text joined and capped, images
 * apart and capped, each cut marked in the text.
 *
 * @example
 * ```ts
 * import { capToolContent } from "./tool_host.ts";
 *
 * const { text } = capToolContent(
 *   [{ type: "text", text: "line one" }, { type: "text", text: "line two" }],
 *   { maxBytes: 8, maxImages: 4 },
 * );
 * text.split("\n")[0]; // "line one"
 * ```
 *
 * @param content The result's content items.
 * @param limits Text bytes and images at most.
 * @returns The text and images.
 */
export function capToolContent(
  content: Record<string, unknown>[],
  limits: { maxBytes: number; maxImages: number },
): { text: string; images: ToolImage[] } {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  const notes: string[] = [];
  let dropped = 0;
  for (const item of content) {
    if (item.type === "text") texts.push(String(item.text ?? ""));
    else if (
      item.type === "image" && typeof item.data === "string" &&
      typeof item.mimeType === "string"
    ) {
      const bytes = Math.floor(item.data.length * 3 / 4);
      if (bytes > MAX_IMAGE_BYTES) {
        notes.push(
          `[an image of ${bytes} bytes left out: over the ${MAX_IMAGE_BYTES}-byte limit]`,
        );
      } else if (images.length >= limits.maxImages) dropped++;
      else images.push({ mimeType: item.mimeType, data: item.data });
    } else if (item.type === "resource") {
      const resource = (item.resource ?? {}) as Record<string, unknown>;
      texts.push(
        typeof resource.text === "string"
          ? resource.text
          : `[resource ${String(resource.uri ?? "")} (${
            String(resource.mimeType ?? "binary")
          })]`,
      );
    } else if (item.type === "audio") {
      texts.push(`[audio (${String(item.mimeType ?? "")})]`);
    } else texts.push(JSON.stringify(item));
  }
  if (dropped > 0) {
    notes.push(
      `[${dropped} image(s) left out: at most ${limits.maxImages} per result]`,
    );
  }
  let text = texts.join("\n");
  const encoded = new TextEncoder().encode(text);
  if (encoded.length > limits.maxBytes) {
    text = new TextDecoder().decode(encoded.subarray(0, limits.maxBytes))
      .replace(/\uFFFD$/, "");
    notes.unshift(
      `[truncated: the result has ${encoded.length} bytes of text; the first ${limits.maxBytes} are shown]`,
    );
  }
  return { text: [text, ...notes].filter(Boolean).join("\n"), images };
}
