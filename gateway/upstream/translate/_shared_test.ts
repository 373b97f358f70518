import assert from "node:assert/strict";
import { chat } from "../../../tests/_chat_streams.ts";
import { functionTools } from "./_shared.ts";
import { TranslationError } from "./chat_types.ts";

const messages = [{ role: "user", content: "Hi" }];
const fn = (name: string) => ({ type: "function", function: { name } });

function refusedAt(body: Record<string, unknown>, param: string): void {
  assert.throws(
    () => functionTools(chat({ model: "m", messages, ...body })),
    (error: unknown) =>
      error instanceof TranslationError && error.param === param,
    JSON.stringify(body),
  );
}

Deno.test("functionTools() keeps only the allowed tools of allowed_tools, with its mode as the choice", () => {
  const { tools, choice } = functionTools(chat({
    model: "m",
    messages,
    tools: [fn("a"), fn("b"), fn("c")],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "required", tools: [fn("c"), fn("a")] },
    },
  }));
  assert.deepEqual(
    tools.map(({ tool, index }) => [tool.function.name, index]),
    [["a", 0], ["c", 2]],
  );
  assert.equal(choice, "required");
});

Deno.test("functionTools() refuses custom tools, custom choices, unknown allowed tools and forced calls with no tools", () => {
  refusedAt({
    tools: [fn("a"), { type: "custom", custom: { name: "grep" } }],
  }, "tools[1]");
  refusedAt({
    tools: [fn("a")],
    tool_choice: { type: "custom", custom: { name: "grep" } },
  }, "tool_choice");
  refusedAt({
    tools: [fn("a")],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [fn("zz")] },
    },
  }, "tool_choice.allowed_tools.tools[0]");
  refusedAt({
    tools: [fn("a")],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [{ type: "mcp" }] },
    },
  }, "tool_choice.allowed_tools.tools[0]");
  refusedAt({ tool_choice: "required" }, "tool_choice");
  refusedAt({ tool_choice: fn("a") }, "tool_choice");
  assert.deepEqual(
    functionTools(chat({ model: "m", messages, tool_choice: "none" })),
    { tools: [], choice: "none" },
  );
});
