import assert from "node:assert/strict";
import { anthropic } from "./anthropic.ts";
import { gemini } from "./gemini.ts";
import type { CallInput } from "./provider.ts";

// A chat call asking for more output than the model's catalog limit: the
// credit hold covers the capped limit, so the upstream must be sent no more.
function chatCall(
  provider: "anthropic" | "gemini",
  asked: number | undefined,
): CallInput {
  const body: Record<string, unknown> = {
    model: "m",
    messages: [{ role: "user", content: "hi" }],
  };
  if (asked !== undefined) body.max_completion_tokens = asked;
  return {
    route: "chat",
    entry: { id: "m", provider, upstream: "m-1", maxOutputTokens: 100 },
    body,
    stream: false,
    maxOutputTokens: Math.min(asked ?? 100, 100),
    query: {},
    headers: new Headers(),
  };
}

Deno.test("chat translated to Anthropic sends the caller's output limit capped by the model's", () => {
  const sent = (asked?: number) =>
    (anthropic.exchange(chatCall("anthropic", asked)).body as {
      max_tokens: number;
    }).max_tokens;
  assert.deepEqual([sent(5000), sent(40), sent()], [100, 40, 100]);
});

Deno.test("chat translated to Gemini sends the caller's output limit capped by the model's", () => {
  const sent = (asked?: number) =>
    (gemini.exchange(chatCall("gemini", asked)).body as {
      generationConfig?: { maxOutputTokens?: number };
    }).generationConfig?.maxOutputTokens;
  assert.deepEqual([sent(5000), sent(40), sent()], [100, 40, undefined]);
});
