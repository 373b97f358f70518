import assert from "node:assert/strict";
import { UnreadableUsageError } from "../usage.ts";
import { anthropicUsage, unsplitCacheTtl } from "./anthropic.ts";

const oneHour = { type: "ephemeral", ttl: "1h" };

Deno.test("unsplitCacheTtl() is 1h only when every cache_control of the request asks for 1 hour", () => {
  const body = (marks: unknown[]) => ({
    system: [{ type: "text", text: "s", cache_control: marks[0] }],
    tools: [{ name: "t", input_schema: {}, cache_control: marks[1] }],
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "a", cache_control: marks[2] },
        {
          type: "tool_result",
          tool_use_id: "x",
          content: [{ type: "text", text: "r", cache_control: marks[3] }],
        },
      ],
    }],
  });
  assert.equal(
    unsplitCacheTtl(body([oneHour, oneHour, oneHour, oneHour])),
    "1h",
  );
  assert.equal(unsplitCacheTtl(body([oneHour])), "1h");
  assert.equal(unsplitCacheTtl({ cache_control: oneHour, messages: [] }), "1h");
  for (
    const other of [{ type: "ephemeral" }, { type: "ephemeral", ttl: "5m" }]
  ) {
    assert.equal(
      unsplitCacheTtl(body([oneHour, oneHour, oneHour, other])),
      "5m",
    );
    assert.equal(unsplitCacheTtl(body([other, oneHour])), "5m");
  }
  // Nothing marked for caching: Anthropic's default.
  assert.equal(unsplitCacheTtl(body([])), "5m");
  for (
    const junk of [null, "text", 3, { messages: "x" }, {
      messages: [null, { content: 7 }],
    }]
  ) {
    assert.equal(unsplitCacheTtl(junk), "5m");
  }
});

Deno.test("anthropicUsage() prices the split where given and the unsplit rest at the lifetime asked for", () => {
  const usage = {
    input_tokens: 1_218,
    output_tokens: 734,
    cache_read_input_tokens: 12_004,
    cache_creation_input_tokens: 3_337,
    cache_creation: {
      ephemeral_5m_input_tokens: 68,
      ephemeral_1h_input_tokens: 3_000,
    },
  };
  const base = {
    inputTokens: 1_218 + 12_004 + 3_337,
    outputTokens: 734,
    cachedInputTokens: 12_004,
  };
  assert.deepEqual(anthropicUsage(usage, "5m"), {
    ...base,
    cacheWriteTokens: 337,
    cacheWrite1hTokens: 3_000,
  });
  assert.deepEqual(anthropicUsage(usage, "1h"), {
    ...base,
    cacheWriteTokens: 68,
    cacheWrite1hTokens: 3_269,
  });
  // No split at all: every write is unsplit.
  const { cache_creation: _split, ...total } = usage;
  assert.deepEqual(anthropicUsage(total, "1h"), {
    ...base,
    cacheWrite1hTokens: 3_337,
  });
  // A split above the total: the split is what was written.
  assert.deepEqual(
    anthropicUsage({ ...usage, cache_creation_input_tokens: 100 }, "5m"),
    {
      ...base,
      cacheWriteTokens: 68,
      cacheWrite1hTokens: 3_000,
      inputTokens: 1_218 + 12_004 + 3_068,
    },
  );
  assert.deepEqual(anthropicUsage(undefined, "5m"), {
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
  });
});

Deno.test("anthropicUsage() refuses a split count that cannot be read", () => {
  assert.throws(
    () =>
      anthropicUsage({
        cache_creation_input_tokens: 5,
        cache_creation: { ephemeral_1h_input_tokens: -5 },
      }, "5m"),
    (error: unknown) =>
      error instanceof UnreadableUsageError &&
      error.message.includes("usage.cache_creation.ephemeral_1h_input_tokens"),
  );
});

Deno.test("unsplitCacheTtl() reads a request of a million system blocks and tool result parts", () => {
  const blocks = Array.from({ length: 1_000_000 }, () => ({
    type: "text",
    text: "s",
    cache_control: oneHour,
  }));
  assert.equal(unsplitCacheTtl({ system: blocks, messages: [] }), "1h");
  assert.equal(
    unsplitCacheTtl({
      messages: [{
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "x", content: blocks }],
      }],
    }),
    "1h",
  );
});
