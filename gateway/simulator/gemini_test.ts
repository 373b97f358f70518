import assert from "node:assert/strict";
import {
  type Content,
  Environment,
  FunctionCallingConfigMode,
  type FunctionDeclaration,
  GoogleGenAI,
  type Part,
  Type,
} from "@google/genai";
import { startSimulator } from "./mod.ts";

function client(baseUrl: string, apiKey = "g-key"): GoogleGenAI {
  return new GoogleGenAI({
    apiKey,
    httpOptions: { baseUrl, retryOptions: { attempts: 1 } },
  });
}

const weatherDeclaration = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: {
    type: Type.OBJECT,
    properties: { city: { type: Type.STRING }, days: { type: Type.INTEGER } },
    required: ["city"],
  },
};

Deno.test("the Google GenAI SDK reads generateContent with usage metadata and cached tokens", async () => {
  await using sim = await startSimulator({
    behaviour: { usage: { cachedTokens: 4 } },
  });
  const response = await client(sim.baseUrls.gemini).models.generateContent({
    model: "gemini-2.5-pro",
    contents: "hello gemini",
    config: { systemInstruction: "Be brief." },
  });
  assert.equal(response.text, "Echo: hello gemini");
  assert.equal(response.candidates?.[0].finishReason, "STOP");
  const prompt = Math.ceil("Be brief.hello gemini".length / 4);
  assert.equal(response.usageMetadata?.promptTokenCount, prompt);
  assert.equal(response.usageMetadata?.cachedContentTokenCount, 4);
  assert.equal(
    response.usageMetadata?.candidatesTokenCount,
    Math.ceil("Echo: hello gemini".length / 4),
  );
  assert.match(
    sim.requests[0].path,
    /^\/gemini\/v1(beta)?\/models\/gemini-2\.5-pro:generateContent$/,
  );
  assert.equal(sim.requests[0].headers["x-goog-api-key"], "g-key");
  assert.equal(sim.requests[0].key, "g-key");
});

Deno.test("the Google GenAI SDK streams SSE chunks whose text joins into the reply", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "red orange yellow green blue indigo violet" },
  });
  const stream = await client(sim.baseUrls.gemini).models.generateContentStream(
    {
      model: "gemini-3-pro-preview",
      contents: [{ role: "user", parts: [{ text: "colours" }] }],
    },
  );
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 3);
  assert.equal(
    chunks.map((c) => c.text ?? "").join(""),
    "red orange yellow green blue indigo violet",
  );
  const last = chunks.at(-1)!;
  assert.equal(last.candidates?.[0].finishReason, "STOP");
  assert.equal(last.usageMetadata?.candidatesTokenCount, Math.ceil(42 / 4));
  assert.equal(sim.requests[0].query.alt, "sse");
});

Deno.test("function calling mode ANY yields a functionCall part and a functionResponse yields text", async () => {
  await using sim = await startSimulator();
  const ai = client(sim.baseUrls.gemini);
  const tools = [{ functionDeclarations: [weatherDeclaration] }];
  const first = await ai.models.generateContent({
    model: "gemini-2.5-pro",
    contents: "weather in Rome",
    config: {
      tools,
      toolConfig: {
        functionCallingConfig: { mode: FunctionCallingConfigMode.ANY },
      },
    },
  });
  const call = first.functionCalls?.[0];
  assert.equal(call?.name, "get_weather");
  assert.deepEqual(call?.args, { city: "city value", days: 7 });
  assert.equal(first.candidates?.[0].finishReason, "STOP");

  const second = await ai.models.generateContent({
    model: "gemini-2.5-pro",
    contents: [
      { role: "user", parts: [{ text: "weather in Rome" }] },
      { role: "model", parts: [{ functionCall: call }] },
      {
        role: "user",
        parts: [{
          functionResponse: {
            name: "get_weather",
            response: { forecast: "hot" },
          },
        }],
      },
    ],
    config: { tools },
  });
  assert.equal(second.text, 'Tool get_weather returned: {"forecast":"hot"}');
});

Deno.test("a call-tool trigger streams a function call from the parameters JSON schema", async () => {
  await using sim = await startSimulator();
  const stream = await client(sim.baseUrls.gemini).models.generateContentStream(
    {
      model: "gemini-2.5-pro",
      contents: "please call tool lookup",
      config: {
        tools: [{
          functionDeclarations: [{
            name: "lookup",
            parametersJsonSchema: {
              type: "object",
              properties: {
                ids: { type: "array", items: { type: "integer" } },
              },
            },
          }],
        }],
      },
    },
  );
  const calls = [];
  for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
  assert.deepEqual(calls.map((c) => [c.name, c.args]), [["lookup", {
    ids: [7, 7],
  }]]);
});

Deno.test("maxOutputTokens cuts a Gemini reply with finishReason MAX_TOKENS and images count as tokens", async () => {
  await using sim = await startSimulator({
    behaviour: { reply: "q".repeat(50) },
  });
  const response = await client(sim.baseUrls.gemini).models.generateContent({
    model: "gemini-2.5-pro",
    contents: [{
      role: "user",
      parts: [{ inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }, {
        text: "describe",
      }],
    }],
    config: { maxOutputTokens: 2 },
  });
  assert.equal(response.candidates?.[0].finishReason, "MAX_TOKENS");
  assert.equal(response.text, "q".repeat(8));
  assert.equal(response.usageMetadata?.candidatesTokenCount, 2);
  assert.equal(response.usageMetadata?.promptTokenCount, 2 + 258);
});

Deno.test("streamGenerateContent without alt=sse answers a JSON array of chunks", async () => {
  await using sim = await startSimulator();
  const response = await fetch(
    `${sim.baseUrls.gemini}/v1beta/models/gemini-2.5-pro:streamGenerateContent?key=q-key`,
    {
      method: "POST",
      body: JSON.stringify({
        contents: [{ role: "user", parts: [{ text: "array please" }] }],
      }),
    },
  );
  const chunks = await response.json();
  assert.ok(Array.isArray(chunks));
  assert.equal(
    chunks.map((
      c: { candidates: { content: { parts: { text: string }[] } }[] },
    ) => c.candidates[0].content.parts[0].text).join(""),
    "Echo: array please",
  );
  assert.equal(sim.requests[0].key, "q-key");
});

Deno.test("Gemini errors use Google's error body, with RetryInfo on 429", async () => {
  await using sim = await startSimulator();
  sim.enqueue({
    match: { provider: "gemini" },
    behaviour: { status: 429, retryAfter: 3 },
  });
  const error = await client(sim.baseUrls.gemini).models.generateContent({
    model: "gemini-2.5-pro",
    contents: "x",
  })
    .catch((e) => e);
  assert.equal(error.status, 429);
  assert.match(error.message, /RESOURCE_EXHAUSTED/);
  const rateLimited = sim.requests[0];
  assert.equal(rateLimited.status, 429);

  const missing = await fetch(
    `${sim.baseUrls.gemini}/v1beta/models/gemini-2.5-pro:generateContent`,
    {
      method: "POST",
      body: JSON.stringify({ contents: [{ parts: [{ text: "x" }] }] }),
    },
  );
  assert.equal(missing.status, 401);
  assert.equal((await missing.json()).error.status, "UNAUTHENTICATED");

  sim.enqueue({ behaviour: { status: 429, retryAfter: 3 } });
  const limited = await fetch(
    `${sim.baseUrls.gemini}/v1beta/models/gemini-2.5-pro:generateContent`,
    {
      method: "POST",
      headers: { "x-goog-api-key": "k" },
      body: JSON.stringify({ contents: [{ parts: [{ text: "x" }] }] }),
    },
  );
  assert.equal(limited.headers.get("retry-after"), "3");
  const body = await limited.json();
  assert.deepEqual(body.error, {
    code: 429,
    message: "Resource has been exhausted (e.g. check quota).",
    status: "RESOURCE_EXHAUSTED",
    details: [{
      "@type": "type.googleapis.com/google.rpc.RetryInfo",
      retryDelay: "3s",
    }],
  });

  const bad = await fetch(
    `${sim.baseUrls.gemini}/v1beta/models/gemini-2.5-pro:generateContent`,
    {
      method: "POST",
      headers: { "x-goog-api-key": "k" },
      body: JSON.stringify({ contents: [] }),
    },
  );
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.status, "INVALID_ARGUMENT");
});

const scriptDeclarations: FunctionDeclaration[] = [
  {
    name: "look",
    parameters: {
      type: Type.OBJECT,
      properties: { verbose: { type: Type.BOOLEAN } },
      required: ["verbose"],
    },
  },
  {
    name: "guess",
    parameters: {
      type: Type.OBJECT,
      properties: { number: { type: Type.INTEGER } },
      required: ["number"],
    },
  },
];

for (const stream of [false, true]) {
  Deno.test(`the scripted agent calls the backticked tools in order over generateContent, then answers (stream=${stream})`, async () => {
    await using sim = await startSimulator();
    const ai = client(sim.baseUrls.gemini);
    const contents: Content[] = [{
      role: "user",
      parts: [{ text: "Play: `look`, then `guess`; `missing` is not a tool." }],
    }];
    const config = { tools: [{ functionDeclarations: scriptDeclarations }] };
    const calls: [string | undefined, unknown][] = [];
    for (let turn = 0; turn < 5; turn++) {
      const request = { model: "gemini-2.5-flash", contents, config };
      let parts: Part[] = [];
      if (stream) {
        for await (
          const chunk of await ai.models.generateContentStream(request)
        ) {
          parts.push(...(chunk.candidates?.[0].content?.parts ?? []));
        }
      } else {
        const response = await ai.models.generateContent(request);
        parts = response.candidates?.[0].content?.parts ?? [];
      }
      const call = parts.find((part) => part.functionCall)?.functionCall;
      if (!call) {
        assert.equal(
          parts.map((part) => part.text ?? "").join(""),
          'Tool guess returned: {"result":"correct"}',
        );
        break;
      }
      calls.push([call.name, call.args]);
      contents.push({ role: "model", parts: [{ functionCall: call }] }, {
        role: "user",
        parts: [{
          functionResponse: {
            name: call.name,
            response: {
              result: call.name === "look" ? "range 1-10" : "correct",
            },
          },
        }],
      });
    }
    assert.deepEqual(calls, [["look", { verbose: true }], ["guess", {
      number: 7,
    }]]);
    assert.equal(sim.requests.length, 3);
  });
}

Deno.test("the computer-use agent goes before the scripted agent over generateContent", async () => {
  await using sim = await startSimulator();
  const response = await client(sim.baseUrls.gemini).models.generateContent({
    model: "gemini-2.5-computer-use-preview-10-2025",
    contents: "Call `look`. Click the text box at (412, 300).",
    config: {
      tools: [
        { computerUse: { environment: Environment.ENVIRONMENT_BROWSER } },
        { functionDeclarations: scriptDeclarations },
      ],
    },
  });
  assert.equal(response.functionCalls?.[0].name, "click_at");
});
