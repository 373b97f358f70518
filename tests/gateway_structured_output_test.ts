/**
 * The official SDKs' structured-output helpers, pointed at the gateway by
 * base URL only, work on every chat model in the catalog and on every native
 * route that takes a schema, streamed and not: the simulator answers JSON
 * built from the schema it received, so a helper's parse succeeds only if
 * the schema reached the upstream in the upstream's own form.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import {
  zodFunction,
  zodResponseFormat,
  zodTextFormat,
} from "openai/helpers/zod";
import { z } from "zod";
import { DEFAULT_CATALOG, modelStatus } from "../gateway/state/catalog.ts";
import type { CatalogEntry } from "../gateway/state/catalog.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";

const Forecast = z.object({
  city: z.string(),
  days: z.number().int(),
  unit: z.enum(["celsius", "fahrenheit"]),
  alerts: z.array(z.object({ level: z.string(), note: z.string() })),
  source: z.literal("sim"),
  comment: z.string().nullable(),
});
type Forecast = z.infer<typeof Forecast>;

const PROMPT = "Forecast for Paris, 3 days";

/** The models served on `route` today (a retired one answers 410). */
const on = (route: RouteName): CatalogEntry[] =>
  DEFAULT_CATALOG.filter((entry) =>
    entry.routes.includes(route) && modelStatus(entry, Date.now()) !== "retired"
  );

function openai(h: Harness): OpenAI {
  return new OpenAI({
    baseURL: `${h.url}/v1`,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
}

/** Checks a parsed answer against the schema (the helper already parsed it with zod). */
function assertForecast(value: Forecast | null | undefined): void {
  assert.ok(value, "the helper parsed an answer");
  assert.deepEqual(Forecast.parse(value), value);
  assert.equal(value.source, "sim");
}

/** What the upstream received, in its own form, for the last call. */
function upstreamSchema(h: Harness, provider: string): unknown {
  const request = h.sim.requests.at(-1)!;
  assert.equal(request.provider, provider);
  const body = request.body as Record<string, Record<string, unknown>>;
  switch (provider) {
    case "anthropic":
      return (body.output_config?.format as { schema?: unknown })?.schema;
    case "gemini":
      return body.generationConfig?.responseJsonSchema;
    default:
      return (body.response_format?.json_schema as { schema?: unknown })
        ?.schema;
  }
}

Deno.test("chat.completions.parse() with zodResponseFormat returns a parsed answer on every chat model", async () => {
  await using h = await startHarness();
  const models = on("chat");
  assert.ok(models.length >= 10, "the catalog lists the chat models");
  for (const entry of models) {
    const completion = await openai(h).chat.completions.parse({
      model: entry.id,
      messages: [{ role: "user", content: PROMPT }],
      response_format: zodResponseFormat(Forecast, "forecast"),
    });
    const message = completion.choices[0].message;
    assertForecast(message.parsed);
    assert.equal(completion.choices[0].finish_reason, "stop", entry.id);
    const schema = upstreamSchema(h, entry.provider);
    assert.ok(schema, `${entry.id}: the schema reached ${entry.provider}`);
  }
});

Deno.test("chat.completions.parse() with a strict zodFunction tool returns parsed arguments on every chat model that takes a forced tool choice, and names the rule of one that does not", async () => {
  await using h = await startHarness();
  for (const entry of on("chat")) {
    const request = openai(h).chat.completions.parse({
      model: entry.id,
      messages: [{ role: "user", content: PROMPT }],
      tools: [zodFunction({ name: "record_forecast", parameters: Forecast })],
      tool_choice: "required",
    });
    if (entry.features?.forcedToolChoice === false) {
      // Its catalog entry says the provider refuses forced tool use.
      await assert.rejects(
        request,
        (error: unknown) =>
          error instanceof OpenAI.BadRequestError &&
          error.param === "tool_choice" &&
          error.message.includes(`model "${entry.id}"`),
        entry.id,
      );
      continue;
    }
    const completion = await request;
    const call = completion.choices[0].message.tool_calls?.[0];
    assert.equal(call?.type, "function", entry.id);
    assert.equal(call.function.name, "record_forecast");
    assertForecast(call.function.parsed_arguments as Forecast);
    assert.equal(completion.choices[0].finish_reason, "tool_calls", entry.id);
    if (entry.provider === "anthropic") {
      const sent = h.sim.requests.at(-1)!.body as {
        tools: { strict?: boolean }[];
      };
      assert.equal(
        sent.tools[0].strict,
        true,
        "Claude decodes the call strictly",
      );
    }
  }
});

Deno.test("the chat.completions.stream() helper parses a streamed structured answer on every chat model", async () => {
  await using h = await startHarness();
  for (const entry of on("chat")) {
    const stream = openai(h).chat.completions.stream({
      model: entry.id,
      messages: [{ role: "user", content: PROMPT }],
      response_format: zodResponseFormat(Forecast, "forecast"),
      stream_options: { include_usage: true },
    });
    let deltas = 0;
    stream.on("content.delta", () => deltas++);
    const completion = await stream.finalChatCompletion();
    assertForecast(completion.choices[0].message.parsed);
    assert.ok(deltas >= 1, `${entry.id} streamed content`);
    assert.ok(completion.usage?.completion_tokens, `${entry.id} usage`);
  }
});

Deno.test("responses.parse() with zodTextFormat returns a parsed answer on every model with the responses route", async () => {
  await using h = await startHarness();
  const models = on("responses").filter((entry) => entry.id !== "operator");
  assert.ok(models.length > 0);
  for (const entry of models) {
    const response = await openai(h).responses.parse({
      model: entry.id,
      input: PROMPT,
      text: { format: zodTextFormat(Forecast, "forecast") },
    });
    assertForecast(response.output_parsed);
  }
});

Deno.test("the Anthropic SDK's messages.parse() with zodOutputFormat returns a parsed answer on every messages model", async () => {
  await using h = await startHarness();
  const client = new Anthropic({
    baseURL: h.url,
    apiKey: h.caller.key,
    maxRetries: 0,
  });
  const models = on("messages");
  assert.ok(models.length > 0);
  for (const entry of models) {
    const message = await client.messages.parse({
      model: entry.id,
      max_tokens: 1024,
      messages: [{ role: "user", content: PROMPT }],
      output_config: { format: zodOutputFormat(Forecast) },
    });
    assertForecast(message.parsed_output);
  }
});

Deno.test("the Google GenAI SDK gets JSON matching responseJsonSchema and responseSchema on every gemini-route model", async () => {
  await using h = await startHarness();
  const ai = new GoogleGenAI({
    apiKey: h.caller.key,
    httpOptions: {
      baseUrl: h.url,
      apiVersion: "v1beta",
      retryOptions: { attempts: 1 },
    },
  });
  const models = on("gemini");
  assert.ok(models.length > 0);
  for (const entry of models) {
    const json = await ai.models.generateContent({
      model: entry.id,
      contents: PROMPT,
      config: {
        responseMimeType: "application/json",
        responseJsonSchema: z.toJSONSchema(Forecast),
      },
    });
    assertForecast(Forecast.parse(JSON.parse(json.text ?? "")));
    let streamed = "";
    for await (
      const chunk of await ai.models.generateContentStream({
        model: entry.id,
        contents: PROMPT,
        config: {
          responseMimeType: "application/json",
          responseJsonSchema: z.toJSONSchema(Forecast),
        },
      })
    ) {
      streamed += chunk.text ?? "";
    }
    assertForecast(Forecast.parse(JSON.parse(streamed)));
    const openapi = await ai.models.generateContent({
      model: entry.id,
      contents: "Name a city",
      config: {
        responseMimeType: "application/json",
        responseSchema: {
          type: "OBJECT",
          properties: { city: { type: "STRING" } },
          required: ["city"],
        } as never,
      },
    });
    assert.equal(typeof JSON.parse(openapi.text ?? "").city, "string");
  }
});
