/**
 * A scripted baseline agent for the desktop environment: it reads the
 * prompt's instructions (the grammar the provider simulator follows: "The
 * screen is WxH", "click … (X, Y)", `type "TEXT"`, "press KEY") and carries
 * them out with the `computer` tool through any MCP client.
 *
 * @module
 */

/** One computer action the prompt asks for. */
export type PromptStep =
  | { action: "click"; x: number; y: number }
  | { action: "double_click"; x: number; y: number }
  | { action: "type"; text: string }
  | { action: "key"; keys: string[] };

/** What a prompt says: the screen size (if given) and the steps in order. */
export interface PromptPlan {
  /** The agent's screen size, when the prompt names it. */
  screen?: { width: number; height: number };
  /** The actions, in the order the prompt gives them. */
  steps: PromptStep[];
}

const SCREEN = /screen is (\d+)\s*[x×]\s*(\d+)/i;
const STEP =
  /(double-click|click)[^(]*\((\d+),\s*(\d+)\)|type\s+"([^"]*)"|press\s+([\w+-]+)/gi;

/**
 * Reads the instructions of a prompt.
 *
 * @param prompt The prompt's text.
 * @returns The screen size and the steps.
 * @example
 * ```ts
 * import { planFromPrompt } from "./agent.ts";
 * planFromPrompt('The screen is 1280x800. Click the box at (10, 20), type "hi", then press Enter.');
 * // { screen: { width: 1280, height: 800 }, steps: [click (10, 20), type "hi", key ["Enter"]] }
 * ```
 */
export function planFromPrompt(prompt: string): PromptPlan {
  const screen = SCREEN.exec(prompt);
  const steps: PromptStep[] = [];
  for (const match of prompt.matchAll(STEP)) {
    const [, click, x, y, text, key] = match;
    if (click) {
      steps.push({
        action: click.toLowerCase() === "click" ? "click" : "double_click",
        x: Number(x),
        y: Number(y),
      });
    } else if (text !== undefined) steps.push({ action: "type", text });
    else if (key) steps.push({ action: "key", keys: [key] });
  }
  return {
    ...(screen && {
      screen: { width: Number(screen[1]), height: Number(screen[2]) },
    }),
    steps,
  };
}

/** The part of an MCP client the agent uses (the v1 and v2 SDK clients both fit). */
export interface ToolCaller {
  /** Calls a tool. */
  callTool(
    params: { name: string; arguments: Record<string, unknown> },
  ): Promise<unknown>;
}

/** What one call of the `computer` tool answered. */
export interface StepResult {
  /** The step. */
  step: PromptStep | { action: "screenshot" };
  /** The tool's result, as the client returned it. */
  result: {
    content: { type: string; text?: string; data?: string }[];
    isError?: boolean;
  };
}

/**
 * Plays a prompt: a screenshot first, then each step with the `computer`
 * tool, as the simulator's agent does.
 *
 * @param client A connected MCP client.
 * @param prompt The scenario's prompt text.
 * @returns Every call's result, in order.
 * @throws {Error} When the tool answers an error.
 */
export async function playPrompt(
  client: ToolCaller,
  prompt: string,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const steps: (PromptStep | { action: "screenshot" })[] = [
    { action: "screenshot" },
    ...planFromPrompt(prompt).steps,
  ];
  for (const step of steps) {
    const result = await client.callTool({
      name: "computer",
      arguments: { ...step },
    }) as StepResult["result"];
    if (result.isError) {
      throw new Error(
        `computer ${JSON.stringify(step)} failed: ${result.content[0]?.text}`,
      );
    }
    results.push({ step, result });
  }
  return results;
}
