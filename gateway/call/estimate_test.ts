import assert from "node:assert/strict";
import { encodePng, pngHeader, toBase64 } from "../../tests/fixtures/png.ts";
import {
  estimateInputTokens,
  outputTextTokens,
  textTokens,
} from "./estimate.ts";
import {
  MEDIA_TOKENS,
  PDF_PAGE_TOKENS,
  pdfTokens,
  REFERENCED_CONTEXT_TOKENS,
} from "./estimate_media.ts";

Deno.test("textTokens() holds a third of a token per ASCII character and more than one per CJK character or emoji", () => {
  assert.equal(textTokens("hello world!"), 4);
  // Nine CJK characters are about nine tokens; the estimate holds 13.5.
  assert.equal(textTokens("你好世界这是一个测"), 14);
  assert.ok(textTokens("日本語のテキスト") >= "日本語のテキスト".length);
  assert.equal(textTokens("😀"), 2);
  assert.equal(textTokens(""), 0);
});

const CLAUDE = [{
  provider: "anthropic",
  upstream: "claude-haiku-4-5",
}] as const;
const OPERATOR = [{
  provider: "openai",
  upstream: "computer-use-preview",
}] as const;
const GEMINI = [{
  provider: "gemini",
  upstream: "gemini-2.5-computer-use-preview-10-2025",
}] as const;

function pngUrl(width: number, height: number): string {
  return `data:image/png;base64,${toBase64(pngHeader(width, height))}`;
}

Deno.test("estimateInputTokens() holds a text document like the same text in a text part, whatever carries it", () => {
  const text = "Plain words in a long document. ".repeat(30_000); // ~1 MB
  const asText = estimateInputTokens({
    model: "claude-haiku-4-5",
    max_tokens: 10,
    messages: [{ role: "user", content: [{ type: "text", text }] }],
  }, CLAUDE);
  assert.ok(asText >= text.length / 3);
  const carriers: unknown[] = [
    // Anthropic document, text source.
    {
      type: "document",
      source: { type: "text", media_type: "text/plain", data: text },
    },
    // Anthropic document, content source of text blocks.
    {
      type: "document",
      source: { type: "content", content: [{ type: "text", text }] },
    },
    // Anthropic document, base64 source of a text type.
    {
      type: "document",
      source: { type: "base64", media_type: "text/plain", data: btoa(text) },
    },
    // OpenAI chat file part with text file_data.
    {
      type: "file",
      file: {
        filename: "notes.txt",
        file_data: `data:text/plain;base64,${btoa(text)}`,
      },
    },
    // A file part whose bare base64 names its type by the file name.
    { type: "file", file: { filename: "notes.md", file_data: btoa(text) } },
    // Responses input_file.
    {
      type: "input_file",
      filename: "data.csv",
      file_data: `data:text/csv;base64,${btoa(text)}`,
    },
    // Gemini inline data of a text type (both spellings).
    { inlineData: { mimeType: "application/json", data: btoa(text) } },
    { inline_data: { mime_type: "text/xml", data: btoa(text) } },
  ];
  for (const part of carriers) {
    const held = estimateInputTokens({
      messages: [{ role: "user", content: [part] }],
    }, CLAUDE);
    assert.ok(
      held >= asText * 0.99,
      `${JSON.stringify(part).slice(0, 60)}: ${held} < ${asText}`,
    );
  }
});

Deno.test("estimateInputTokens() holds a PDF at a token per decoded byte, and never below a page", () => {
  const pdf = "%PDF-1.7\n" + "x".repeat(300_000);
  const held = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "document",
        source: {
          type: "base64",
          media_type: "application/pdf",
          data: btoa(pdf),
        },
      }],
    }],
  }, CLAUDE);
  assert.ok(
    held >= pdfTokens(pdf.length) && held < pdfTokens(pdf.length) + 100,
    `${held}`,
  );
  assert.equal(pdfTokens(10), PDF_PAGE_TOKENS);
  // gpt-4o-mini bills a page's image at 33× the tokens: the hold scales up.
  const mini = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "file",
        file: {
          filename: "a.pdf",
          file_data: `data:application/pdf;base64,${btoa(pdf)}`,
        },
      }],
    }],
  }, [{ provider: "openai", upstream: "gpt-4o-mini" }]);
  const page = 3_000 + 2_833 + 4 * 5_667;
  assert.ok(
    mini >= pdfTokens(pdf.length, page) && mini >= pdf.length * 6,
    `${mini}`,
  );
  const small = estimateInputTokens({
    input: [{
      role: "user",
      content: [{
        type: "input_file",
        filename: "a.pdf",
        file_data: `data:application/pdf;base64,${btoa("%PDF-1.4 tiny")}`,
      }],
    }],
  }, OPERATOR);
  // A page on OpenAI: its text and an 85 + 170 × 4 image.
  assert.ok(small >= 3_000 + 765, `${small}`);
});

Deno.test("estimateInputTokens() holds unknown media and references conservatively", () => {
  const audio = btoa("RIFF" + "\0".repeat(400_000));
  const held = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "input_audio",
        input_audio: { data: audio, format: "wav" },
      }],
    }],
  });
  assert.ok(held >= 200_000, `${held}`);
  assert.ok(
    estimateInputTokens({
      messages: [{
        role: "user",
        content: [{
          type: "input_audio",
          input_audio: { data: "AAAA", format: "wav" },
        }],
      }],
    }) >= MEDIA_TOKENS,
  );
  for (
    const part of [
      {
        type: "document",
        source: { type: "url", url: "https://example.com/a.pdf" },
      },
      { type: "document", source: { type: "file", file_id: "file_1" } },
      { type: "file", file: { file_id: "file-1" } },
      { type: "input_file", file_url: "https://example.com/a.pdf" },
      {
        fileData: {
          mimeType: "video/mp4",
          fileUri: "https://example.com/v.mp4",
        },
      },
    ]
  ) {
    assert.ok(
      estimateInputTokens({ messages: [{ role: "user", content: [part] }] }) >=
        REFERENCED_CONTEXT_TOKENS,
      JSON.stringify(part),
    );
  }
});

Deno.test("estimateInputTokens() holds a 1.5 MB screenshot as the image it is, in every place one rides", async () => {
  const png = await encodePng(1280, 800, 400);
  assert.ok(png.length > 1_500_000, `${png.length}`);
  const url = `data:image/png;base64,${toBase64(png)}`;
  const base64 = url.slice(url.indexOf(",") + 1);
  const screenshot = { type: "computer_screenshot", image_url: url };
  const operator = estimateInputTokens({
    model: "operator",
    input: [{
      type: "computer_call_output",
      call_id: "call_1",
      output: screenshot,
    }],
  }, OPERATOR);
  // 85 + 170 per tile, 6 tiles at 1229 × 768; the JSON around it is small.
  assert.ok(operator >= 1105 && operator < 1105 + 100, `${operator}`);
  const anthropicImage = {
    type: "image",
    source: { type: "base64", media_type: "image/png", data: base64 },
  };
  const claude = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "t1",
        content: [anthropicImage],
      }],
    }],
  }, CLAUDE);
  assert.ok(claude >= 1366 && claude < 1366 + 100, `${claude}`);
  const gemini = estimateInputTokens({
    contents: [{
      role: "user",
      parts: [{
        functionResponse: {
          name: "click_at",
          response: { url: "x" },
          parts: [{ inlineData: { mimeType: "image/png", data: base64 } }],
        },
      }],
    }],
  }, GEMINI);
  assert.ok(gemini >= 258 * 4 && gemini < 258 * 4 + 100, `${gemini}`);
  for (
    const part of [
      { type: "image_url", image_url: { url } },
      { type: "image_url", image_url: url },
      { type: "input_image", image_url: url },
    ]
  ) {
    const held = estimateInputTokens({
      messages: [{ role: "user", content: [part] }],
    }, OPERATOR);
    assert.ok(held >= 1105 && held < 1105 + 100, `${part.type}: ${held}`);
  }
});

Deno.test("estimateInputTokens() prices an image for the dearest of the call's models, and at its most by URL", () => {
  const part = { type: "image_url", image_url: { url: pngUrl(1920, 1080) } };
  const body = { messages: [{ role: "user", content: [part] }] };
  const text = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{ type: "image_url", image_url: { url: "" } }],
    }],
  }, []);
  const both = estimateInputTokens(body, [...CLAUDE, ...OPERATOR]);
  assert.equal(
    both,
    Math.max(
      estimateInputTokens(body, CLAUDE),
      estimateInputTokens(body, OPERATOR),
    ),
  );
  const byUrl = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "image_url",
        image_url: { url: "https://example.com/a.png" },
      }],
    }],
  }, OPERATOR);
  assert.ok(byUrl >= 85 + 170 * 8, `${byUrl}`);
  assert.ok(text > 0);
  // detail: low is 85 on OpenAI.
  const low = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "image_url",
        image_url: { url: pngUrl(1920, 1080), detail: "low" },
      }],
    }],
  }, [{ provider: "openai", upstream: "gpt-4o" }]);
  assert.ok(low >= 85 && low < 85 + 100, `${low}`);
});

Deno.test("estimateInputTokens() holds what looks like an image but is not one at the most an image bills", () => {
  const text = btoa("not a picture ".repeat(10_000));
  const held = estimateInputTokens({
    messages: [{
      role: "user",
      content: [{
        type: "image",
        source: { type: "base64", media_type: "image/png", data: text },
      }],
    }],
  }, CLAUDE);
  assert.ok(held >= 1640 && held < 1640 + 100, `${held}`);
  // A string "source" is no image source: its text is counted.
  const disguised = "secret text ".repeat(10_000);
  const fake = estimateInputTokens({
    tools: [{ name: "t", input_schema: { type: "image", source: disguised } }],
  }, CLAUDE);
  assert.ok(fake >= textTokens(disguised), `${fake}`);
});

Deno.test("estimateInputTokens() never holds less than the body's JSON at a quarter token per character", () => {
  const bodies = [
    {
      tools: [{
        input_schema: {
          type: "object",
          properties: Object.fromEntries(
            Array.from(
              { length: 500 },
              (_, i) => [`p${i}`, { type: "integer", minimum: i }],
            ),
          ),
        },
      }],
    },
    {
      messages: [{ role: "user", content: '\u0001\u0002"\\\n'.repeat(5_000) }],
    },
    {
      input: {
        numbers: Array.from({ length: 10_000 }, (_, i) => i),
        flags: Array(5_000).fill(true),
        nothing: Array(5_000).fill(null),
        empty: Array(5_000).fill(""),
      },
    },
  ];
  for (const body of bodies) {
    const held = estimateInputTokens(body);
    const json = Math.ceil(JSON.stringify(body).length / 4);
    assert.ok(held >= json, `${held} < ${json}`);
  }
});

Deno.test("estimateInputTokens() holds referenced context a body only points at", () => {
  assert.ok(
    estimateInputTokens({
      model: "gpt-5.1",
      input: "go on",
      previous_response_id: "resp_1",
    }) >=
      REFERENCED_CONTEXT_TOKENS,
  );
  assert.ok(
    estimateInputTokens({
      contents: [],
      cachedContent: "cachedContents/abc",
    }) >=
      REFERENCED_CONTEXT_TOKENS,
  );
  assert.ok(
    estimateInputTokens({ input: "go on", previous_response_id: null }) < 100,
  );
});

Deno.test("estimateInputTokens() holds at least a token per CJK character of a prompt", () => {
  const prompt = "请把这段话翻译成英文".repeat(100);
  const estimate = estimateInputTokens({
    model: "gpt-4o",
    messages: [{ role: "user", content: prompt }],
  });
  assert.ok(estimate >= prompt.length, `${estimate} < ${prompt.length}`);
});

Deno.test("estimateInputTokens() walks a body nested 100 000 levels deep", () => {
  let deep: unknown = "x";
  for (let i = 0; i < 100_000; i++) deep = { a: deep };
  // Per level: the key (1 token) and `{"a":}` (6 characters at a third).
  assert.equal(estimateInputTokens(deep), 100_000 + 1 + 200_001);
});

Deno.test("outputTextTokens() counts the answer text of a streamed event, not its labels", () => {
  const chunk = {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [{
      index: 0,
      delta: { role: "assistant", content: "hello there friend" },
      finish_reason: null,
    }],
  };
  assert.equal(outputTextTokens(chunk), textTokens("hello there friend"));
  assert.equal(
    outputTextTokens({
      type: "content_block_delta",
      delta: { type: "input_json_delta", partial_json: '{"a":1}' },
    }),
    textTokens('{"a":1}'),
  );
  assert.equal(outputTextTokens({ usage: { prompt_tokens: 5 } }), 0);
});
