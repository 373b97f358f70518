/**
 * The gateway's hold against the simulator's bill for screenshot traffic:
 * for computer-use conversations carrying images of random sizes in every
 * carrier the conventions have, the hold (`estimateInputTokens`) is never
 * below the input tokens the simulator reports, and the simulator never
 * bills an image above the gateway's per-provider image figure.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { estimateInputTokens } from "../gateway/call/estimate.ts";
import {
  type ImageTarget,
  imageTokens as heldImageTokens,
} from "../gateway/call/images.ts";
import { imageTokens as billedImageTokens } from "../gateway/simulator/image.ts";
import { startSimulator } from "../gateway/simulator/mod.ts";
import { pngHeader, toBase64 } from "./fixtures/png.ts";

const size = fc.record({
  width: fc.integer({ min: 1, max: 8000 }),
  height: fc.integer({ min: 1, max: 8000 }),
});

Deno.test("the simulator never bills an image above the gateway's hold for it", () => {
  const targets: [ImageTarget, "anthropic" | "openai" | "gemini"][] = [
    [{ provider: "anthropic", upstream: "claude-sonnet-5-5" }, "anthropic"],
    [{ provider: "openai", upstream: "computer-use-preview" }, "openai"],
    [{ provider: "openai", upstream: "gpt-4o" }, "openai"],
    [{
      provider: "gemini",
      upstream: "gemini-2.5-computer-use-preview-10-2025",
    }, "gemini"],
  ];
  fc.assert(
    fc.property(
      size,
      fc.constantFrom("low", "high", "auto"),
      (image, detail) => {
        for (const [target, billing] of targets) {
          const detailOf = detail as "low" | "high" | "auto";
          assert.ok(
            billedImageTokens(image, billing, detailOf) <=
              heldImageTokens(target, image, detailOf),
            `${image.width}x${image.height} ${target.upstream} ${detail}`,
          );
          assert.ok(
            billedImageTokens(undefined, billing) <=
              heldImageTokens(target, undefined),
          );
        }
      },
    ),
    { numRuns: 500 },
  );
});

const PROMPT =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';

function dataUrl(image: { width: number; height: number }): string {
  return `data:image/png;base64,${
    toBase64(pngHeader(image.width, image.height))
  }`;
}

/** A mid-episode request per convention, its screenshots of the given sizes. */
function bodies(images: { width: number; height: number }[]) {
  // Claude Sonnet 5.5's documented wire: the toolset, member calls.
  const anthropic = {
    model: "claude-sonnet-5-5",
    max_tokens: 1024,
    tools: [{ type: "computer_toolset_20260801" }],
    messages: [
      { role: "user", content: PROMPT },
      ...images.flatMap((image, i) => [
        {
          role: "assistant",
          content: [{
            type: "tool_use",
            id: `toolu_${i}`,
            name: "screenshot",
            input: {},
            toolset_name: "computer",
          }],
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: `toolu_${i}`,
            toolset_name: "computer",
            content: [{
              type: "image",
              source: {
                type: "base64",
                media_type: "image/png",
                data: dataUrl(image).split(",")[1],
              },
            }],
          }],
        },
      ]),
    ],
  };
  const responses = {
    model: "computer-use-preview",
    truncation: "auto",
    tools: [{
      type: "computer_use_preview",
      display_width: 1280,
      display_height: 800,
      environment: "browser",
    }],
    input: [
      { role: "user", content: PROMPT },
      ...images.flatMap((image, i) => [
        {
          type: "computer_call",
          id: `cu_${i}`,
          call_id: `call_${i}`,
          action: { type: "screenshot" },
          pending_safety_checks: [],
          status: "completed",
        },
        {
          type: "computer_call_output",
          call_id: `call_${i}`,
          output: { type: "computer_screenshot", image_url: dataUrl(image) },
        },
      ]),
    ],
  };
  const gemini = {
    contents: [
      { role: "user", parts: [{ text: PROMPT }] },
      ...images.flatMap((image, i) => [
        {
          role: "model",
          parts: [{ functionCall: { name: "click_at", args: { x: i, y: i } } }],
        },
        {
          role: "user",
          parts: [{
            functionResponse: {
              name: "click_at",
              response: { url: "http://127.0.0.1/" },
              parts: [{
                inlineData: {
                  mimeType: "image/png",
                  data: dataUrl(image).split(",")[1],
                },
              }],
            },
          }],
        },
      ]),
    ],
    tools: [{ computerUse: { environment: "ENVIRONMENT_BROWSER" } }],
  };
  const chat = {
    model: "glm-4.5v",
    tools: [{
      type: "function",
      function: {
        name: "computer",
        parameters: { type: "object", properties: {} },
      },
    }],
    messages: [
      { role: "user", content: PROMPT },
      ...images.flatMap((image, i) => [
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: `c${i}`,
            type: "function",
            function: {
              name: "computer",
              arguments: '{"action":"screenshot"}',
            },
          }],
        },
        { role: "tool", tool_call_id: `c${i}`, content: "done" },
        {
          role: "user",
          content: [{ type: "image_url", image_url: { url: dataUrl(image) } }],
        },
      ]),
    ],
  };
  return { anthropic, responses, gemini, chat };
}

Deno.test("the hold covers what the simulator bills for computer-use conversations in every convention", async () => {
  await using sim = await startSimulator();
  const post = async (
    url: string,
    headers: Record<string, string>,
    body: unknown,
  ) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return await response.json();
  };
  await fc.assert(
    fc.asyncProperty(
      fc.array(size, { minLength: 1, maxLength: 6 }),
      async (images) => {
        const { anthropic, responses, gemini, chat } = bodies(images);
        const claude = await post(`${sim.baseUrls.anthropic}/v1/messages`, {
          "x-api-key": "k",
        }, anthropic);
        const billedClaude = claude.usage.input_tokens +
          claude.usage.cache_read_input_tokens +
          claude.usage.cache_creation_input_tokens;
        assert.ok(
          estimateInputTokens(anthropic, [{
            provider: "anthropic",
            upstream: "claude-sonnet-5-5",
          }]) >= billedClaude,
        );
        const operator = await post(`${sim.baseUrls.openai}/responses`, {
          authorization: "Bearer k",
        }, responses);
        assert.ok(
          estimateInputTokens(responses, [{
            provider: "openai",
            upstream: "computer-use-preview",
          }]) >=
            operator.usage.input_tokens,
        );
        const model = "gemini-2.5-computer-use-preview-10-2025";
        const google = await post(
          `${sim.baseUrls.gemini}/v1beta/models/${model}:generateContent`,
          { "x-goog-api-key": "k" },
          gemini,
        );
        assert.ok(
          estimateInputTokens(gemini, [{
            provider: "gemini",
            upstream: model,
          }]) >=
            google.usageMetadata.promptTokenCount,
        );
        const glm = await post(`${sim.baseUrls.openrouter}/chat/completions`, {
          authorization: "Bearer k",
        }, chat);
        assert.ok(
          estimateInputTokens(chat, [{
            provider: "openrouter",
            upstream: "z-ai/glm-4.5v",
          }]) >=
            glm.usage.prompt_tokens,
        );
      },
    ),
    { numRuns: 40 },
  );
});
