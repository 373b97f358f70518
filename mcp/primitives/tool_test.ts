import assert from "node:assert/strict";
import { z } from "zod";
import { BaseTool, defaultToolName, normalizeToolResult } from "./tool.ts";

Deno.test("normalizeToolResult() turns a string into one text item", () => {
  assert.deepEqual(normalizeToolResult("hi"), {
    content: [{ type: "text", text: "hi" }],
  });
});

Deno.test("normalizeToolResult() gives a plain object as structuredContent with a JSON text copy", () => {
  assert.deepEqual(normalizeToolResult({ a: [1, 2] }), {
    content: [{ type: "text", text: '{"a":[1,2]}' }],
    structuredContent: { a: [1, 2] },
  });
});

Deno.test("normalizeToolResult() keeps a list of content items and wraps other lists", () => {
  const items = [{ type: "text", text: "a" }, {
    type: "image",
    data: "AA==",
    mimeType: "image/png",
  }];
  assert.deepEqual(normalizeToolResult(items), { content: items });
  assert.deepEqual(normalizeToolResult([1, 2]), {
    content: [{ type: "text", text: "[1,2]" }],
    structuredContent: { result: [1, 2] },
  });
});

Deno.test("normalizeToolResult() passes a full CallToolResult through", () => {
  const result = { content: [{ type: "text", text: "x" }], isError: true };
  assert.equal(normalizeToolResult(result), result);
  const structured = { content: [], structuredContent: { n: 1 } };
  assert.equal(normalizeToolResult(structured), structured);
});

Deno.test("normalizeToolResult() gives an evaluate result structuredContent with reward and done", () => {
  assert.deepEqual(normalizeToolResult({ reward: 1, done: true }), {
    content: [{ type: "text", text: '{"reward":1,"done":true}' }],
    structuredContent: { reward: 1, done: true },
  });
  assert.deepEqual(
    normalizeToolResult({
      reward: 0,
      done: false,
      content: "Not yet",
      info: { seen: 3 },
    }),
    {
      content: [{ type: "text", text: "Not yet" }],
      structuredContent: { reward: 0, done: false, info: { seen: 3 } },
    },
  );
});

Deno.test("normalizeToolResult() gives empty content for undefined and null, text for other primitives", () => {
  assert.deepEqual(normalizeToolResult(undefined), { content: [] });
  assert.deepEqual(normalizeToolResult(null), { content: [] });
  assert.deepEqual(normalizeToolResult(42), {
    content: [{ type: "text", text: "42" }],
  });
});

Deno.test("defaultToolName() lower-cases the class name and drops a trailing Tool", () => {
  assert.equal(defaultToolName("ClickTool"), "click");
  assert.equal(defaultToolName("Scroll"), "scroll");
  assert.equal(defaultToolName("Tool"), "tool");
});

Deno.test("BaseTool.mcp carries name, description, input and a handler bound to the tool", async () => {
  class TypeTool extends BaseTool<{ text: z.ZodString }, { typed: string[] }> {
    override description = "Types text.";
    override input = { text: z.string() };
    call({ text }: { text: string }) {
      this.env.typed.push(text);
      return "typed";
    }
  }
  const tool = new TypeTool({ typed: [] });
  const definition = tool.mcp;
  assert.equal(definition.name, "type");
  assert.equal(definition.description, "Types text.");
  assert.deepEqual(Object.keys(definition.input ?? {}), ["text"]);
  const extra = {} as Parameters<typeof definition.handler>[1];
  assert.equal(await definition.handler({ text: "hello" }, extra), "typed");
  assert.deepEqual(tool.env.typed, ["hello"]);
});

Deno.test("BaseTool subclasses may override the default name", () => {
  class Renamed extends BaseTool {
    override name = "custom_name";
    call() {
      return "ok";
    }
  }
  assert.equal(new Renamed().mcp.name, "custom_name");
});
