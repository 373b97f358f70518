/**
 * A scripted baseline agent for the number-guessing environment: it reads
 * the range with `look` and bisects with `guess`, using only the tools and
 * text an LLM agent would see. Any MCP client that can call tools will do.
 *
 * @module
 */

/** The one thing the agent needs from an MCP client (the SDK `Client` fits). */
export interface ToolCaller {
  /**
   * Calls a tool.
   *
   * @param params Tool name and arguments.
   * @returns The tool result; only `content` (its text items) and `isError` are read.
   */
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
  ): Promise<Record<string, unknown>>;
}

function textOf(result: Record<string, unknown>): string {
  const items = Array.isArray(result.content) ? result.content : [];
  return items
    .filter((item): item is { type: "text"; text: string } =>
      item?.type === "text" && typeof item.text === "string"
    )
    .map((item) => item.text)
    .join("\n");
}

/**
 * Plays the game in play to its end by bisection.
 *
 * @param client A connected MCP client.
 * @returns The guesses made and whether the last one was correct.
 * @throws {Error} When `look` or `guess` fails or answers unreadable text.
 */
export async function playByBisection(
  client: ToolCaller,
): Promise<{ guesses: number[]; solved: boolean }> {
  const look = await client.callTool({ name: "look", arguments: {} });
  const range = /between (\d+) and (\d+)/.exec(textOf(look));
  if (look.isError || !range) {
    throw new Error(`Cannot read the range from "look": "${textOf(look)}"`);
  }
  let [low, high] = [Number(range[1]), Number(range[2])];
  const guesses: number[] = [];
  while (low <= high) {
    const number = Math.floor((low + high) / 2);
    const result = await client.callTool({
      name: "guess",
      arguments: { number },
    });
    const text = textOf(result);
    if (result.isError) {
      throw new Error(`Guess "${number}" failed: "${text}"`);
    }
    guesses.push(number);
    if (text.startsWith("Correct")) return { guesses, solved: true };
    if (/\b0 guesses left/.test(text)) break;
    if (text.includes("the number is higher")) low = number + 1;
    else if (text.includes("the number is lower")) high = number - 1;
    else throw new Error(`Cannot read the hint in "${text}"`);
  }
  return { guesses, solved: false };
}
