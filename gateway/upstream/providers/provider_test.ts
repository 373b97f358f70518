import assert from "node:assert/strict";
import { UnreadableUsageError } from "../usage.ts";
import type { ChatStreamBase } from "../translate/_shared.ts";
import {
  nestedErrorMessage,
  NO_USAGE,
  parseJson,
  passthroughEnd,
  sseFrame,
  StreamUsage,
  type StreamUsageFormat,
  translatedChatRelay,
} from "./provider.ts";

const COUNTS: StreamUsageFormat = {
  countsIn: (_event, data) => (data as { usage?: unknown } | null)?.usage,
  read: (counts) => {
    for (const value of Object.values(counts)) {
      if (typeof value !== "number") {
        throw new UnreadableUsageError("usage", value);
      }
    }
    return {
      inputTokens: Number(counts.input ?? 0),
      outputTokens: Number(counts.output ?? 0),
      cachedInputTokens: 0,
    };
  },
};

Deno.test("sseFrame() writes a data frame, named when an event is given", () => {
  assert.equal(sseFrame("[DONE]"), "data: [DONE]\n\n");
  assert.equal(
    sseFrame('{"a":1}', "message_stop"),
    'event: message_stop\ndata: {"a":1}\n\n',
  );
});

Deno.test("parseJson() returns undefined for garbage instead of throwing", () => {
  assert.deepEqual(parseJson('{"ok":true}'), { ok: true });
  assert.equal(parseJson("<html>"), undefined);
  assert.equal(parseJson(""), undefined);
});

Deno.test("nestedErrorMessage() finds the message in each provider's error shape, else the body's start", () => {
  assert.equal(
    nestedErrorMessage('{"error":{"message":"Rate limited","type":"x"}}'),
    "Rate limited",
  );
  assert.equal(nestedErrorMessage('{"error":"Bad key"}'), "Bad key");
  assert.equal(nestedErrorMessage('{"message":"Overloaded"}'), "Overloaded");
  assert.equal(
    nestedErrorMessage("  upstream exploded  "),
    "upstream exploded",
  );
  assert.equal(nestedErrorMessage("x".repeat(500)), "x".repeat(200));
  assert.equal(
    nestedErrorMessage("   "),
    "The provider returned an error without a body",
  );
  // A message that is not a string is not passed on as one.
  assert.equal(
    nestedErrorMessage('{"error":{"message":7}}'),
    '{"error":{"message":7}}',
  );
});

Deno.test("StreamUsage folds counts spread over events, the larger reading winning", () => {
  const usage = new StreamUsage(COUNTS);
  assert.deepEqual(usage.usage, NO_USAGE);
  usage.event({ data: "" }, { usage: { input: 10, output: 1 } });
  usage.event({ data: "" }, { text: "no usage here" });
  usage.event({ data: "" }, { usage: { output: 12 } });
  usage.event({ data: "" }, { usage: { input: 3 } });
  assert.deepEqual(usage.usage, {
    inputTokens: 10,
    outputTokens: 12,
    cachedInputTokens: 0,
  });
});

Deno.test("StreamUsage fails where an unreadable count arrives", () => {
  const usage = new StreamUsage(COUNTS);
  usage.event({ data: "" }, { usage: { input: 4 } });
  assert.throws(
    () => usage.event({ data: "" }, { usage: { output: "lots" } }),
    UnreadableUsageError,
  );
});

Deno.test("translatedChatRelay() frames each piece, bills the upstream's usage and closes with [DONE] unless failed", () => {
  let failed = false;
  const translator = {
    pushParsed: (data: unknown) => {
      const { text, usage } = data as { text?: string; usage?: unknown };
      if (text === "boom") failed = true;
      return usage
        ? [{ choices: [], usage: { prompt_tokens: 0 } }]
        : [{ choices: [{ delta: { content: text } }] }];
    },
    finish: () => [],
    get failed() {
      return failed;
    },
  } as unknown as ChatStreamBase;
  const relay = translatedChatRelay(translator, COUNTS);
  assert.equal(
    relay.event({ data: "" }, { text: "hi" }),
    `data: ${JSON.stringify({ choices: [{ delta: { content: "hi" } }] })}\n\n`,
  );
  const billed = relay.event({ data: "" }, { usage: { input: 9, output: 4 } });
  const chunk = JSON.parse(billed.slice("data: ".length));
  assert.equal(chunk.usage.prompt_tokens, 9);
  assert.equal(chunk.usage.completion_tokens, 4);
  assert.equal(relay.failure, undefined);
  assert.equal(relay.end(), "data: [DONE]\n\n");

  const broken = translatedChatRelay(translator, COUNTS);
  broken.event({ data: "" }, { text: "boom" });
  assert.equal(broken.failure, "The provider's stream failed");
  assert.equal(broken.end(), "");
});

Deno.test("passthroughEnd() is silent after the terminal event, else the route's in-stream error naming the provider", () => {
  assert.equal(passthroughEnd("chat", "xai", true), "");
  const cut = passthroughEnd("chat", "xai", false);
  assert.match(cut, /^data: /);
  const frame = JSON.parse(cut.slice("data: ".length).trim());
  assert.equal(
    frame.error.message,
    "The xai stream ended before it was complete",
  );
  assert.equal(frame.error.code, "upstream_incomplete");
  const messages = passthroughEnd("messages", "anthropic", false);
  assert.match(messages, /^event: error\n/);
  assert.match(messages, /The anthropic stream ended before it was complete/);
});
