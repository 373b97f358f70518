/**
 * Holds that cannot be fooled by the part carrying the input (issue 22) and
 * screenshots held as the images they are (issue 23), end to end through a
 * gateway in front of the simulator: text in a document is held as text, a
 * 1.5 MB screenshot as a few hundred image tokens, real PNGs of several sizes
 * in every convention within their provider's image pricing, and random
 * bodies in every convention never held below what the simulator bills.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { createCaller, type NewCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { estimateInputTokens } from "../gateway/call/estimate.ts";
import { imageTokens } from "../gateway/call/images.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";
import { callPath } from "./_gateway_routes.ts";
import { expectedCost, ledgerEntryOf, model } from "./_gateway_e2e.ts";
import { encodePng, pngHeader, toBase64 } from "./fixtures/png.ts";

interface Sent {
  status: number;
  text: string;
  requestId: string;
}

async function send(
  h: Harness,
  route: RouteName,
  modelId: string,
  body: unknown,
  key = h.caller.key,
): Promise<Sent> {
  const response = await fetch(h.url + callPath(route, modelId, false), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    text: await response.text(),
    requestId: response.headers.get("x-request-id") ?? "",
  };
}

/** A caller of the harness's gateway with `usd` dollars. */
function callerWith(h: Harness, usd: number): Promise<NewCaller> {
  return createCaller(h.kv, {
    name: `holds-${usd}-${crypto.randomUUID()}`,
    creditsMicros: usdToMicros(usd),
  });
}

/** A body on `route` whose one user message carries `parts` (Gemini parts on the gemini route). */
function bodyOf(
  route: RouteName,
  modelId: string,
  parts: unknown[],
): Record<string, unknown> {
  switch (route) {
    case "chat":
      return {
        model: modelId,
        max_tokens: 64,
        messages: [{ role: "user", content: parts }],
      };
    case "messages":
      return {
        model: modelId,
        max_tokens: 64,
        messages: [{ role: "user", content: parts }],
      };
    case "responses":
      return {
        model: modelId,
        max_output_tokens: 64,
        input: [{ role: "user", content: parts }],
      };
    case "gemini":
      return {
        contents: [{ role: "user", parts }],
        generationConfig: { maxOutputTokens: 64 },
      };
  }
}

const DOCUMENT_TEXT = "Plain words of a long report, line after line.\n"
  .repeat(22_000); // ~1 MB

Deno.test("a document of 1 MB of plain text is held like the same text in a text part: a poor caller gets 402 for each, a funded one is served", async () => {
  await using h = await startHarness({ credits: 50 });
  const poor = (await callerWith(h, 0.05)).key;
  const data = btoa(DOCUMENT_TEXT);
  const cases: [RouteName, string, unknown][] = [
    ["messages", "claude-haiku-4-5", { type: "text", text: DOCUMENT_TEXT }],
    ["messages", "claude-haiku-4-5", {
      type: "document",
      source: { type: "text", media_type: "text/plain", data: DOCUMENT_TEXT },
    }],
    ["messages", "claude-haiku-4-5", {
      type: "document",
      source: {
        type: "content",
        content: [{ type: "text", text: DOCUMENT_TEXT }],
      },
    }],
    ["messages", "claude-haiku-4-5", {
      type: "document",
      source: { type: "base64", media_type: "text/plain", data },
    }],
    ["chat", "gpt-4o-mini", {
      type: "file",
      file: {
        filename: "report.txt",
        file_data: `data:text/plain;base64,${data}`,
      },
    }],
    ["responses", "gpt-5-mini", {
      type: "input_file",
      filename: "report.txt",
      file_data: `data:text/plain;base64,${data}`,
    }],
    ["gemini", "gemini-2.5-computer-use-preview", {
      inlineData: { mimeType: "text/plain", data },
    }],
  ];
  for (const [route, modelId, part] of cases) {
    const label = `${route} ${modelId} ${JSON.stringify(part).slice(0, 50)}`;
    const body = bodyOf(route, modelId, [part]);
    const before = h.sim.requests.length;
    const refused = await send(h, route, modelId, body, poor);
    assert.equal(refused.status, 402, `${label}: ${refused.text}`);
    assert.equal(h.sim.requests.length, before, `${label}: forwarded`);
    const served = await send(h, route, modelId, body);
    assert.equal(served.status, 200, `${label}: ${served.text}`);
    const charged = await ledgerEntryOf(h.kv, h.caller.id, served.requestId);
    assert.ok(
      estimateInputTokens(body, [model(modelId)]) >= charged.inputTokens!,
      `${label}: held below the ${charged.inputTokens} tokens billed`,
    );
  }
});

function computerCall(step: number, screenshot: string): unknown[] {
  return [
    {
      type: "computer_call",
      id: `cu_${step}`,
      call_id: `call_${step}`,
      action: { type: "screenshot" },
      pending_safety_checks: [],
      status: "completed",
    },
    {
      type: "computer_call_output",
      call_id: `call_${step}`,
      output: { type: "computer_screenshot", image_url: screenshot },
    },
  ];
}

const COMPUTER_TOOL = {
  type: "computer_use_preview",
  display_width: 1280,
  display_height: 800,
  environment: "browser",
};

Deno.test("an operator call carrying a 1.5 MB screenshot in a computer_call_output is held as an image: a $1 caller is served", async () => {
  await using h = await startHarness({ credits: 50 });
  const caller = await callerWith(h, 1);
  const png = await encodePng(1280, 800, 400);
  assert.ok(png.length >= 1_500_000, `${png.length} bytes`);
  const body = {
    model: "operator",
    tools: [COMPUTER_TOOL],
    truncation: "auto",
    input: [
      { role: "user", content: "The screen is 1280x800. Click (640, 400)." },
      ...computerCall(0, `data:image/png;base64,${toBase64(png)}`),
    ],
  };
  const held = estimateInputTokens(body, [model("operator")]);
  // 85 + 170 × 6 tiles for the screenshot, not 2 MB of base64 text.
  assert.ok(held >= 1105 && held < 1105 + 300, `${held}`);
  const sent = await send(h, "responses", "operator", body, caller.key);
  assert.equal(sent.status, 200, sent.text);
  const charged = await ledgerEntryOf(h.kv, caller.id, sent.requestId);
  assert.ok(held >= charged.inputTokens!, `${held} < ${charged.inputTokens}`);
});

Deno.test("a 20-step operator episode with a screenshot at every step costs a $1 caller what the upstream billed, with no 402", async () => {
  await using h = await startHarness({ credits: 50 });
  const { key } = await callerWith(h, 1);
  const screenshot = `data:image/png;base64,${
    toBase64(await encodePng(1280, 800, 40))
  }`;
  const input: unknown[] = [{
    role: "user",
    content: "The screen is 1280x800. Click the box at (640, 400).",
  }];
  let billedMicros = 0;
  for (let step = 0; step < 20; step++) {
    input.push(...computerCall(step, screenshot));
    const body = {
      model: "operator",
      tools: [COMPUTER_TOOL],
      truncation: "auto",
      input,
    };
    const sent = await send(h, "responses", "operator", body, key);
    assert.equal(sent.status, 200, `step ${step}: ${sent.text}`);
    const usage = JSON.parse(sent.text).usage;
    assert.ok(
      estimateInputTokens(body, [model("operator")]) >= usage.input_tokens,
      `step ${step}`,
    );
    billedMicros += expectedCost({
      inputTokens: usage.input_tokens,
      cachedTokens: usage.input_tokens_details?.cached_tokens ?? 0,
      outputTokens: usage.output_tokens,
    }, "operator");
  }
  const balance = await fetch(`${h.url}/credits`, {
    headers: { authorization: `Bearer ${key}` },
  }).then((response) => response.json());
  assert.equal(Math.round((1 - balance.balance) * 1e6), billedMicros);
});

/** Every place an image rides, per convention, and the model it is sent to. */
const CARRIERS: {
  route: RouteName;
  model: string;
  part: (url: string, base64: string) => unknown;
}[] = [
  {
    route: "chat",
    model: "gpt-4o",
    part: (url) => ({ type: "image_url", image_url: { url } }),
  },
  {
    route: "chat",
    model: "claude-haiku-4-5",
    part: (url) => ({ type: "image_url", image_url: { url } }),
  },
  {
    route: "chat",
    model: "gemini-2.5-pro",
    part: (url) => ({ type: "image_url", image_url: { url } }),
  },
  {
    route: "chat",
    model: "grok-4-1-fast",
    part: (url) => ({ type: "image_url", image_url: { url } }),
  },
  {
    route: "messages",
    model: "claude-haiku-4-5",
    part: (_, data) => ({
      type: "image",
      source: { type: "base64", media_type: "image/png", data },
    }),
  },
  {
    route: "responses",
    model: "operator",
    part: (url) => ({ type: "input_image", image_url: url }),
  },
  {
    route: "gemini",
    model: "gemini-2.5-computer-use-preview",
    part: (_, data) => ({ inlineData: { mimeType: "image/png", data } }),
  },
];

Deno.test("real PNGs of several sizes in every convention are held within their provider's image pricing, never below what is billed", async () => {
  await using h = await startHarness({ credits: 50 });
  const sizes: [number, number][] = [
    [64, 64],
    [800, 600],
    [1280, 800],
    [1920, 1080],
    [3000, 2000],
  ];
  for (const [width, height] of sizes) {
    const png = await encodePng(width, height, 8);
    const data = toBase64(png);
    const url = `data:image/png;base64,${data}`;
    for (const carrier of CARRIERS) {
      const label = `${width}x${height} ${carrier.route} ${carrier.model}`;
      const entry = model(carrier.model);
      const text = { type: "text", text: "What is on this screen?" };
      const gemini = { text: "What is on this screen?" };
      const withImage = bodyOf(carrier.route, carrier.model, [
        carrier.route === "gemini" ? gemini : text,
        carrier.part(url, data),
      ]);
      const without = bodyOf(carrier.route, carrier.model, [
        carrier.route === "gemini" ? gemini : text,
      ]);
      const held = estimateInputTokens(withImage, [entry]);
      const image = imageTokens(entry, { width, height });
      // The text around it, one image at the model's price, and the few
      // characters of JSON that name the part.
      const rest = held - estimateInputTokens(without, [entry]);
      assert.ok(rest >= image && rest < image + 100, `${label}: ${rest}`);
      if (data.length > 100_000) {
        assert.ok(held < data.length / 20, `${label}: priced as text`);
      }
      const sent = await send(h, carrier.route, carrier.model, withImage);
      assert.equal(sent.status, 200, `${label}: ${sent.text}`);
      const charged = await ledgerEntryOf(h.kv, h.caller.id, sent.requestId);
      assert.ok(
        held >= charged.inputTokens!,
        `${label}: held ${held} < billed ${charged.inputTokens}`,
      );
    }
  }
});

// ------------------------------------------------------------ property test

const anyText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({
    unit: fc.constantFrom("\u0001", '"', "\\", "\n", "a", " "),
    maxLength: 200,
  }),
);
const imageSize = fc.record({
  width: fc.integer({ min: 1, max: 5_000 }),
  height: fc.integer({ min: 1, max: 5_000 }),
});
const pngData = imageSize.map(({ width, height }) =>
  toBase64(pngHeader(width, height))
);
const textData = anyText.map((text) =>
  toBase64(new TextEncoder().encode(text))
);
const binaryData = fc.uint8Array({ maxLength: 3_000 }).map(toBase64);
const pdfData = fc.uint8Array({ maxLength: 3_000 }).map((bytes) =>
  toBase64(
    new Uint8Array([...new TextEncoder().encode("%PDF-1.7\n"), ...bytes]),
  )
);

/** Parts of one user message, in each convention's shapes, nested where the convention nests. */
const chatParts = fc.array(
  fc.oneof(
    anyText.map((text) => ({ type: "text", text })),
    fc.record({
      data: pngData,
      detail: fc.constantFrom(undefined, "low", "high", "auto"),
    })
      .map(({ data, detail }) => ({
        type: "image_url",
        image_url: {
          url: `data:image/png;base64,${data}`,
          ...(detail ? { detail } : {}),
        },
      })),
  ),
  { minLength: 1, maxLength: 6 },
);
const chatFileParts = fc.array(
  fc.oneof(
    anyText.map((text) => ({ type: "text", text })),
    textData.map((data) => ({
      type: "file",
      file: {
        filename: "notes.txt",
        file_data: `data:text/plain;base64,${data}`,
      },
    })),
    pdfData.map((data) => ({
      type: "file",
      file: {
        filename: "a.pdf",
        file_data: `data:application/pdf;base64,${data}`,
      },
    })),
    binaryData.map((data) => ({
      type: "input_audio",
      input_audio: { data, format: "wav" },
    })),
  ),
  { minLength: 1, maxLength: 4 },
);
const anthropicLeaf = fc.oneof(
  anyText.map((text) => ({ type: "text", text })),
  pngData.map((data) => ({
    type: "image",
    source: { type: "base64", media_type: "image/png", data },
  })),
);
const anthropicParts = fc.array(
  fc.oneof(
    anthropicLeaf,
    anyText.map((data) => ({
      type: "document",
      source: { type: "text", media_type: "text/plain", data },
    })),
    textData.map((data) => ({
      type: "document",
      source: { type: "base64", media_type: "text/plain", data },
    })),
    pdfData.map((data) => ({
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data },
    })),
    fc.array(anyText, { minLength: 1, maxLength: 3 }).map((texts) => ({
      type: "document",
      source: {
        type: "content",
        content: texts.map((text) => ({ type: "text", text })),
      },
    })),
  ),
  { minLength: 1, maxLength: 5 },
);
const responsesItems = fc.array(
  fc.oneof(
    fc.array(
      fc.oneof(
        anyText.map((text) => ({ type: "input_text", text })),
        pngData.map((data) => ({
          type: "input_image",
          image_url: `data:image/png;base64,${data}`,
        })),
        textData.map((data) => ({
          type: "input_file",
          filename: "a.txt",
          file_data: `data:text/plain;base64,${data}`,
        })),
      ),
      { minLength: 1, maxLength: 4 },
    ).map((content) => ({ role: "user", content })),
    fc.record({ id: fc.integer({ min: 0, max: 1e6 }), data: pngData }).map((
      { id, data },
    ) => [
      {
        type: "computer_call",
        id: `cu_${id}`,
        call_id: `call_${id}`,
        action: { type: "screenshot" },
        pending_safety_checks: [],
        status: "completed",
      },
      {
        type: "computer_call_output",
        call_id: `call_${id}`,
        output: {
          type: "computer_screenshot",
          image_url: `data:image/png;base64,${data}`,
        },
      },
    ]),
  ),
  { minLength: 1, maxLength: 4 },
).map((items) => [
  { role: "user", content: "look at the screen" },
  ...items.flat(),
]);
const geminiParts = fc.array(
  fc.oneof(
    anyText.map((text) => ({ text })),
    pngData.map((data) => ({ inlineData: { mimeType: "image/png", data } })),
    pngData.map((data) => ({ inline_data: { mime_type: "image/png", data } })),
    textData.map((data) => ({ inlineData: { mimeType: "text/csv", data } })),
    pdfData.map((data) => ({
      inlineData: { mimeType: "application/pdf", data },
    })),
    fc.record({ data: pngData, text: anyText }).map(({ data, text }) => ({
      functionResponse: {
        name: "click_at",
        response: { url: "http://localhost/", note: text },
        parts: [{ inlineData: { mimeType: "image/png", data } }],
      },
    })),
  ),
  { minLength: 1, maxLength: 5 },
);

type Case = { route: RouteName; model: string; body: unknown };
const cases: fc.Arbitrary<Case> = fc.oneof(
  fc.record({
    parts: chatParts,
    model: fc.constantFrom(
      "gpt-4o",
      "claude-haiku-4-5",
      "gemini-2.5-pro",
      "grok-4-1-fast",
    ),
  })
    .map(({ parts, model }) => ({
      route: "chat" as const,
      model,
      body: bodyOf("chat", model, parts),
    })),
  chatFileParts.map((parts) => ({
    route: "chat" as const,
    model: "gpt-4o",
    body: bodyOf("chat", "gpt-4o", parts),
  })),
  fc.record({ parts: anthropicParts, nest: fc.boolean() }).map((
    { parts, nest },
  ) => ({
    route: "messages" as const,
    model: "claude-haiku-4-5",
    body: nest
      ? {
        model: "claude-haiku-4-5",
        max_tokens: 64,
        messages: [
          { role: "user", content: "take a screenshot" },
          {
            role: "assistant",
            content: [{
              type: "tool_use",
              id: "t1",
              name: "computer",
              input: { action: "screenshot" },
            }],
          },
          {
            role: "user",
            content: [{
              type: "tool_result",
              tool_use_id: "t1",
              content: parts.filter((p) => p.type !== "document"),
            }],
          },
        ],
      }
      : bodyOf("messages", "claude-haiku-4-5", parts),
  })),
  responsesItems.map((input) => ({
    route: "responses" as const,
    model: "operator",
    body: { model: "operator", max_output_tokens: 64, input },
  })),
  geminiParts.map((parts) => ({
    route: "gemini" as const,
    model: "gemini-2.5-computer-use-preview",
    body: bodyOf("gemini", "gemini-2.5-computer-use-preview", parts),
  })),
);

Deno.test("property: a body in any convention, with text in every part type, images of random sizes and nesting, is never held below the simulator's count", async () => {
  await using h = await startHarness({ credits: 1_000 });
  let served = 0;
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(cases, async ({ route, model: modelId, body }) => {
      runs++;
      const sent = await send(h, route, modelId, body);
      // A body a translator or the simulator refuses bills nothing.
      if (sent.status !== 200) {
        assert.equal(sent.status, 400, sent.text);
        return;
      }
      served++;
      const charged = await ledgerEntryOf(h.kv, h.caller.id, sent.requestId);
      const held = estimateInputTokens(body, [model(modelId)]);
      assert.ok(
        held >= charged.inputTokens!,
        `${route} ${modelId}: held ${held} < billed ${charged.inputTokens}`,
      );
    }),
    { numRuns: 150 },
  );
  // The property was about served calls, not refusals.
  assert.ok(served >= runs * 0.8, `${served} of ${runs} served`);
});
