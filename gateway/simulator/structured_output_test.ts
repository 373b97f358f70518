import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { GoogleGenAI, Type } from "@google/genai";
import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { z } from "zod";
import { startSimulator } from "./mod.ts";

const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

const Event = z.object({
  title: z.string(),
  day: z.iso.date(),
  kind: z.enum(["lunch", "dinner"]),
  guests: z.array(
    z.object({ name: z.string(), age: z.number().int().min(18) }),
  ),
  note: z.string().nullable(),
});

const eventSchema = {
  type: "object",
  properties: {
    title: { type: "string" },
    day: { type: "string", format: "date" },
    kind: { type: "string", enum: ["lunch", "dinner"] },
    guests: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        properties: {
          name: { type: "string" },
          age: { type: "integer", minimum: 18 },
        },
        required: ["name", "age"],
        additionalProperties: false,
      },
    },
  },
  required: ["title", "day", "kind", "guests"],
  additionalProperties: false,
};

function assertValid(schema: object, text: string | null | undefined): void {
  assert.ok(text, "the reply has text");
  const validate = ajv.compile(schema);
  assert.ok(validate(JSON.parse(text)), ajv.errorsText(validate.errors));
}

Deno.test("chat response_format json_schema: the OpenAI SDK's parse() gets a valid object, streamed and not", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-one" });
  const request = {
    model: "gpt-4o",
    messages: [{
      role: "user" as const,
      content: "Alice and Bob meet for lunch",
    }],
    response_format: zodResponseFormat(Event, "event"),
  };
  const completion = await client.chat.completions.parse(request);
  const parsed = completion.choices[0].message.parsed;
  assert.ok(parsed);
  assert.equal(parsed.kind, "lunch");
  assert.equal(parsed.day, "2026-01-01");
  assert.ok(parsed.guests.every((guest) => guest.age >= 18));

  const stream = client.chat.completions.stream(request);
  const final = await stream.finalChatCompletion();
  assert.deepEqual(final.choices[0].message.parsed, parsed);
  // The schema counts as prompt: the same request without it is cheaper.
  const plain = await client.chat.completions.create({
    model: "gpt-4o",
    messages: request.messages,
  });
  assert.ok(completion.usage!.prompt_tokens > plain.usage!.prompt_tokens);
});

Deno.test("chat response_format json_object answers a JSON object holding the reply", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({
    baseURL: sim.baseUrls.openrouter,
    apiKey: "sk-or",
  });
  const completion = await client.chat.completions.create({
    model: "openai/gpt-4o",
    messages: [{ role: "user", content: "give me JSON" }],
    response_format: { type: "json_object" },
  });
  assert.deepEqual(JSON.parse(completion.choices[0].message.content!), {
    reply: "Echo: give me JSON",
  });
});

Deno.test("a malformed response_format is refused with 400 naming the field", async () => {
  await using sim = await startSimulator();
  const post = (responseFormat: unknown) =>
    fetch(`${sim.baseUrls.openai}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: "Bearer sk",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "gpt-4o",
        messages: [{ role: "user", content: "hi" }],
        response_format: responseFormat,
      }),
    });
  const missing = await post({ type: "json_schema" });
  assert.equal(missing.status, 400);
  assert.match(
    (await missing.json()).error.message,
    /response_format\.json_schema/,
  );
  const unknown = await post({ type: "yaml" });
  assert.equal(unknown.status, 400);
  assert.match((await unknown.json()).error.message, /'yaml'/);
});

Deno.test("Responses text.format json_schema: the OpenAI SDK's responses.parse() gets a valid object, streamed and not", async () => {
  await using sim = await startSimulator();
  const client = new OpenAI({ baseURL: sim.baseUrls.openai, apiKey: "sk-one" });
  const request = {
    model: "gpt-4.1",
    input: "Alice and Bob meet for dinner",
    text: { format: zodTextFormat(Event, "event") },
  };
  const response = await client.responses.parse(request);
  assert.ok(response.output_parsed);
  assert.equal(response.output_parsed.kind, "lunch");
  const stream = client.responses.stream(request);
  const final = await stream.finalResponse();
  assert.deepEqual(final.output_parsed, response.output_parsed);
});

Deno.test("Anthropic output_config.format: the SDK's messages.parse() gets a valid object; the beta output_format works too", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  const message = await client.messages.parse({
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    messages: [{ role: "user", content: "Alice and Bob meet for lunch" }],
    output_config: { format: zodOutputFormat(Event) },
  });
  assert.ok(message.parsed_output);
  assert.equal(message.parsed_output.kind, "lunch");
  assert.equal(message.stop_reason, "end_turn");

  const beta = await fetch(`${sim.baseUrls.anthropic}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": "sk-ant",
      "anthropic-version": "2023-06-01",
      "anthropic-beta": "structured-outputs-2025-11-13",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
      output_format: { type: "json_schema", schema: eventSchema },
    }),
  });
  const text = (await beta.text()).split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)))
    .filter((event) => event.delta?.type === "text_delta")
    .map((event) => event.delta.text).join("");
  assertValid(eventSchema, text);
});

Deno.test("Anthropic refuses an output format without a schema, naming the field", async () => {
  await using sim = await startSimulator();
  const client = new Anthropic({
    baseURL: sim.baseUrls.anthropic,
    apiKey: "sk-ant",
  });
  await assert.rejects(
    client.messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
      output_config: { format: { type: "json_schema" } as never },
    }),
    (error: unknown) =>
      error instanceof Anthropic.BadRequestError &&
      /output_config\.format\.schema/.test(error.message),
  );
});

Deno.test("Gemini responseSchema (OpenAPI subset) and responseJsonSchema answer valid JSON, streamed and not; text/x.enum answers a value", async () => {
  await using sim = await startSimulator();
  const ai = new GoogleGenAI({
    apiKey: "g-key",
    httpOptions: { baseUrl: sim.baseUrls.gemini },
  });
  const response = await ai.models.generateContent({
    model: "gemini-2.5-flash",
    contents: "List a recipe",
    config: {
      responseMimeType: "application/json",
      responseSchema: {
        type: Type.ARRAY,
        items: {
          type: Type.OBJECT,
          properties: {
            recipeName: { type: Type.STRING },
            ingredients: { type: Type.ARRAY, items: { type: Type.STRING } },
          },
          propertyOrdering: ["recipeName", "ingredients"],
        },
      },
    },
  });
  assert.deepEqual(JSON.parse(response.text!), [
    {
      recipeName: "recipeName value",
      ingredients: ["ingredients value", "ingredients value"],
    },
    {
      recipeName: "recipeName value",
      ingredients: ["ingredients value", "ingredients value"],
    },
  ]);

  let streamed = "";
  for await (
    const chunk of await ai.models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "An event",
      config: {
        responseMimeType: "application/json",
        responseJsonSchema: eventSchema,
      },
    })
  ) streamed += chunk.text ?? "";
  assertValid(eventSchema, streamed);

  const choice = await ai.models.generateContent({
    model: "gemini-2.5-flash",
    contents: "Which instrument?",
    config: {
      responseMimeType: "text/x.enum",
      responseSchema: { type: Type.STRING, enum: ["Percussion", "String"] },
    },
  });
  assert.equal(choice.text, "Percussion");
});
