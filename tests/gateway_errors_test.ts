/**
 * Caller authentication and every error the request path can return, each in
 * the caller's route convention: bad requests, oversize bodies, upstream
 * refusals, failures, garbage, timeouts and streams that break off. Every
 * response read here is checked to hold no provider key.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import type { RouteName } from "../gateway/conventions.ts";
import { type Harness, startHarness } from "./_gateway_harness.ts";
import {
  callBody,
  callPath,
  errorMessageOf,
  PREFIXES,
  readSse,
  ROUTES,
} from "./_gateway_routes.ts";

/** A call the suite sends: a route and a model served on it. */
interface Call {
  label: string;
  route: RouteName;
  model: string;
}

/** One call per route, and the chat route on each translation path. */
const CALLS: readonly Call[] = [
  { label: "chat via OpenAI", route: "chat", model: "gpt-4o-mini" },
  { label: "chat via Anthropic", route: "chat", model: "claude-haiku-4-5" },
  { label: "chat via Gemini", route: "chat", model: "gemini-2.5-pro" },
  { label: "chat via xAI", route: "chat", model: "grok-4-1-fast" },
  { label: "chat via OpenRouter", route: "chat", model: "z-ai/glm-4.5v" },
  { label: "messages", route: "messages", model: "claude-haiku-4-5" },
  { label: "responses", route: "responses", model: "gpt-4o-mini" },
  {
    label: "gemini",
    route: "gemini",
    model: "gemini-2.5-computer-use-preview",
  },
];

/** The model each route is called with when only the route matters. */
const MODEL_OF: Record<RouteName, string> = {
  chat: "gpt-4o-mini",
  messages: "claude-haiku-4-5",
  responses: "gpt-4o-mini",
  gemini: "gemini-2.5-computer-use-preview",
};

/** A response read in full. */
interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Asserts that no provider key occurs in an answer's body or headers.
 */
function assertNoProviderKey(h: Harness, answer: Answer, label: string): void {
  const headerText = [...answer.headers].map(([k, v]) => `${k}: ${v}`).join(
    "\n",
  );
  for (const key of Object.values(h.providerKeys).flat()) {
    assert.ok(
      !answer.text.includes(key),
      `${label}: body holds a provider key`,
    );
    assert.ok(
      !headerText.includes(key),
      `${label}: header holds a provider key`,
    );
  }
}

/**
 * Sends a request to the gateway, reads the whole answer and checks it holds
 * no provider key. `body` may be an object (sent as JSON), raw text, or a
 * stream (sent without content-length).
 */
async function send(
  h: Harness,
  path: string,
  body: unknown,
  headers: Record<string, string> = h.auth(),
): Promise<Answer> {
  const payload = body instanceof ReadableStream || typeof body === "string"
    ? body
    : JSON.stringify(body);
  const response = await fetch(h.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: payload as BodyInit,
  });
  const answer = {
    status: response.status,
    headers: response.headers,
    text: await response.text(),
  };
  assertNoProviderKey(h, answer, `POST ${path}`);
  return answer;
}

/** Asserts an error answer's status and convention; returns its message (and body). */
function errorOf(route: RouteName, answer: Answer, status: number) {
  assert.equal(answer.status, status, answer.text);
  assert.match(answer.headers.get("content-type") ?? "", /application\/json/);
  const body = JSON.parse(answer.text);
  return { message: errorMessageOf(route, body, status), body };
}

function sendCall(h: Harness, call: Call, stream: boolean): Promise<Answer> {
  return send(
    h,
    callPath(call.route, call.model, stream),
    callBody(call.route, call.model, stream),
  );
}

Deno.test("a caller key is accepted as Authorization Bearer, x-api-key or x-goog-api-key on every route", async () => {
  await using h = await startHarness();
  const styles: Record<string, string>[] = [
    { authorization: `Bearer ${h.caller.key}` },
    { "x-api-key": h.caller.key },
    { "x-goog-api-key": h.caller.key },
  ];
  for (const route of ROUTES) {
    for (const headers of styles) {
      const answer = await send(
        h,
        callPath(route, MODEL_OF[route], false),
        callBody(route, MODEL_OF[route], false),
        headers,
      );
      assert.equal(
        answer.status,
        200,
        `${route} ${Object.keys(headers)}: ${answer.text}`,
      );
    }
  }
  // The caller's key is the gateway's business: it never goes upstream.
  assert.equal(h.sim.requests.length, ROUTES.length * styles.length);
  for (const request of h.sim.requests) {
    assert.ok(!JSON.stringify(request.headers).includes(h.caller.key));
  }
});

Deno.test("a missing or unknown caller key gets 401 in each route's convention, and nothing goes upstream", async () => {
  await using h = await startHarness();
  const cases: [string, Record<string, string>][] = [
    ["no key", {}],
    ["an unknown Bearer key", { authorization: "Bearer mk-unknown" }],
    ["an unknown x-api-key", { "x-api-key": "mk-unknown" }],
    ["an unknown x-goog-api-key", { "x-goog-api-key": "mk-unknown" }],
    ["a non-Bearer Authorization", { authorization: `Basic ${h.caller.key}` }],
  ];
  for (const route of ROUTES) {
    for (const [label, headers] of cases) {
      const answer = await send(
        h,
        callPath(route, MODEL_OF[route], false),
        callBody(route, MODEL_OF[route], false),
        headers,
      );
      const { message } = errorOf(route, answer, 401);
      assert.match(message, /API key/, `${route}, ${label}`);
    }
  }
  const credits = await fetch(`${h.url}/v1/credits`);
  assert.equal(credits.status, 401);
  assertNoProviderKey(h, {
    status: credits.status,
    headers: credits.headers,
    text: await credits.text(),
  }, "GET /v1/credits");
  assert.equal(h.sim.requests.length, 0);
});

Deno.test("malformed JSON gets 400 in each route's convention, bare and under /v1", async () => {
  await using h = await startHarness();
  for (const route of ROUTES) {
    for (const prefix of PREFIXES) {
      for (const text of ['{"model": "gpt-4o-mini", ', "[1, 2]", "null"]) {
        const answer = await send(
          h,
          prefix + callPath(route, MODEL_OF[route], false),
          text,
        );
        const { message } = errorOf(route, answer, 400);
        assert.match(message, /JSON/, `${route}: ${text}`);
      }
    }
  }
  assert.equal(h.sim.requests.length, 0);
});

Deno.test("missing or mistyped fields get 400 naming the field, in each route's convention", async () => {
  await using h = await startHarness();
  const user = [{ role: "user", content: "hi" }];
  const cases: [RouteName, unknown, string][] = [
    ["chat", { messages: user }, "model"],
    ["chat", { model: "gpt-4o-mini" }, "messages"],
    ["chat", { model: "gpt-4o-mini", messages: "hi" }, "messages"],
    ["chat", { model: 42, messages: user }, "model"],
    [
      "chat",
      { model: "gpt-4o-mini", messages: user, max_tokens: "ten" },
      "max_tokens",
    ],
    ["chat", { model: "gpt-4o-mini", messages: user, stream: "yes" }, "stream"],
    ["messages", { model: "claude-haiku-4-5", messages: user }, "max_tokens"],
    ["messages", { max_tokens: 10, messages: user }, "model"],
    ["messages", { model: "claude-haiku-4-5", max_tokens: 10 }, "messages"],
    ["responses", { input: "hi" }, "model"],
    ["responses", { model: "gpt-4o-mini", input: 5 }, "input"],
    ["gemini", { contents: "hi" }, "contents"],
    ["gemini", {}, "contents"],
    [
      "gemini",
      {
        contents: [{ parts: [{ text: "hi" }] }],
        generationConfig: { maxOutputTokens: -1 },
      },
      "generationConfig.maxOutputTokens",
    ],
  ];
  for (const [route, body, field] of cases) {
    const answer = await send(h, callPath(route, MODEL_OF[route], false), body);
    const { message, body: error } = errorOf(route, answer, 400);
    assert.ok(message.includes(`"${field}"`), `${route} ${field}: ${message}`);
    if (route === "chat" || route === "responses") {
      assert.equal(error.error.param, field);
    }
  }
  // A chat request the translation cannot carry is a 400 naming the part.
  const audio = await send(h, "/v1/chat/completions", {
    model: "claude-haiku-4-5",
    messages: [{
      role: "user",
      content: [{
        type: "input_audio",
        input_audio: { data: "AAAA", format: "wav" },
      }],
    }],
  });
  const { body: error } = errorOf("chat", audio, 400);
  assert.equal(error.error.param, "messages[0].content[0]");
  assert.equal(h.sim.requests.length, 0);
});

Deno.test("a body over GATEWAY_MAX_BODY_BYTES gets 413 in each route's convention, with or without content-length", async () => {
  await using h = await startHarness({
    env: { GATEWAY_MAX_BODY_BYTES: "4096" },
  });
  const big = "x".repeat(8192);
  for (const route of ROUTES) {
    const path = callPath(route, MODEL_OF[route], false);
    const json = JSON.stringify(callBody(route, MODEL_OF[route], false, big));

    const sized = await send(h, path, json);
    errorOf(route, sized, 413);

    // Chunked, no content-length: the limit must hold while reading.
    let sent = 0;
    const bytes = new TextEncoder().encode(json);
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(sent, sent + 1024));
        sent += 1024;
      },
    });
    const streamed = await send(h, path, chunked);
    errorOf(route, streamed, 413);

    // Just under the limit passes.
    const small = await send(h, path, callBody(route, MODEL_OF[route], false));
    assert.equal(small.status, 200);
  }
  assert.equal(
    h.sim.requests.length,
    ROUTES.length,
    "only the small calls went upstream",
  );
});

Deno.test("an upstream 4xx is passed through with its status and message, in the caller's convention", async () => {
  await using h = await startHarness();
  for (const call of CALLS) {
    for (
      const [status, stream] of [[400, false], [400, true], [404, false], [
        422,
        true,
      ]] as const
    ) {
      h.sim.enqueue({
        behaviour: { status, message: `Upstream refused: ${call.label}` },
      });
      const answer = await sendCall(h, call, stream);
      const { message } = errorOf(call.route, answer, status);
      assert.equal(message, `Upstream refused: ${call.label}`);
    }
  }
  assert.equal(h.sim.pending, 0);
});

Deno.test("an upstream error message that quotes the provider key reaches the caller without the key", async () => {
  await using h = await startHarness();
  // Each key's upstream quotes the key it was sent, as some providers do.
  for (const key of Object.values(h.providerKeys).flat()) {
    h.sim.setKeyBehaviour(key, {
      status: 400,
      message: `Key ${key} may not do that`,
    });
  }
  for (const call of CALLS) {
    // `send` fails the test if any provider key is in the answer.
    const answer = await sendCall(h, call, false);
    const { message } = errorOf(call.route, answer, 400);
    assert.match(message, /^Key .+ may not do that$/);
  }
  assertNoProviderKeyInLogs(h);
});

Deno.test("an upstream 5xx becomes 502 in the caller's convention", async () => {
  await using h = await startHarness();
  for (const call of CALLS) {
    for (const [status, stream] of [[500, false], [503, true]] as const) {
      // Every key of the model and of its catalog alternates fails (a 5xx is
      // tried on a second key of the provider, then on the alternates).
      const entry = DEFAULT_CATALOG.find((e) => e.id === call.model)!;
      const attempts = 2 * (1 + (entry.alternates?.length ?? 0));
      for (let i = 0; i < attempts; i++) {
        h.sim.enqueue({ behaviour: { status } });
      }
      const answer = await sendCall(h, call, stream);
      const { message } = errorOf(call.route, answer, 502);
      assert.ok(message.length > 0);
    }
  }
  assertNoProviderKeyInLogs(h);
});

Deno.test("an upstream that answers garbage gets 502, or the in-stream error once a stream began", async () => {
  await using h = await startHarness();
  for (const call of CALLS) {
    h.sim.enqueue({ behaviour: { garbage: true } });
    const whole = await sendCall(h, call, false);
    errorOf(call.route, whole, 502);

    h.sim.enqueue({ behaviour: { garbage: true } });
    const streamed = await sendCall(h, call, true);
    assert.ok(
      !streamed.text.includes("not json at all"),
      `${call.label}: garbage relayed: ${streamed.text}`,
    );
    if (streamed.status !== 200) {
      errorOf(call.route, streamed, 502);
    } else {
      assertStreamError(call.route, streamed, call.label);
    }
  }
  assertNoProviderKeyInLogs(h);
});

Deno.test("an upstream that hangs past GATEWAY_UPSTREAM_TIMEOUT_MS gets 504 in the caller's convention", async () => {
  await using h = await startHarness({
    env: { GATEWAY_UPSTREAM_TIMEOUT_MS: "300" },
  });
  for (const route of ROUTES) {
    h.sim.enqueue({ behaviour: { hang: true } });
    const started = Date.now();
    const answer = await send(
      h,
      callPath(route, MODEL_OF[route], false),
      callBody(route, MODEL_OF[route], false),
    );
    const elapsed = Date.now() - started;
    errorOf(route, answer, 504);
    assert.ok(elapsed >= 250 && elapsed < 3000, `${route}: ${elapsed} ms`);
  }
  // The gateway gave up on the upstream request rather than leaving it open.
  await h.sim.waitFor(() => h.sim.aborted === ROUTES.length);
  assertNoProviderKeyInLogs(h);
});

Deno.test("a streamed call whose upstream hangs gets 504, and one that stalls mid-stream ends with the in-stream timeout error", async () => {
  await using h = await startHarness({
    env: { GATEWAY_UPSTREAM_TIMEOUT_MS: "300" },
  });
  for (const route of ROUTES) {
    const path = callPath(route, MODEL_OF[route], true);
    const body = callBody(route, MODEL_OF[route], true);
    h.sim.enqueue({ behaviour: { hang: true } });
    errorOf(route, await send(h, path, body), 504);

    h.sim.enqueue({
      behaviour: {
        chunkDelayMs: 2000,
        reply: "several words so the stream has events",
      },
    });
    const stalled = await send(h, path, body);
    assertStreamError(route, stalled, `${route} stalled`, 504);
  }
  assertNoProviderKeyInLogs(h);
});

/**
 * Asserts that the stream's last event is the in-stream error of `route`'s
 * convention for `status`, and that the stream did not claim to finish.
 */
function assertStreamError(
  route: RouteName,
  answer: Answer,
  label: string,
  status = 502,
) {
  assert.equal(answer.status, 200);
  const frames = answer.text.trim().split(/\r?\n\r?\n/);
  const last = frames.at(-1)!;
  const data = JSON.parse(
    last.split(/\r?\n/).find((line) => line.startsWith("data: "))!.slice(6),
  );
  switch (route) {
    case "chat":
      assert.match(last, /^data: /, label);
      errorMessageOf("chat", data, status);
      assert.equal(data.error.type, "server_error");
      assert.ok(!answer.text.includes("[DONE]"), label);
      break;
    case "responses":
      assert.match(last, /^event: error\n/, label);
      assert.equal(data.type, "error");
      assert.equal(typeof data.message, "string");
      assert.ok("code" in data, label);
      assert.ok(!answer.text.includes("response.completed"), label);
      break;
    case "messages":
      assert.match(last, /^event: error\n/, label);
      errorMessageOf("messages", data, status);
      assert.equal(
        data.error.type,
        status === 504 ? "timeout_error" : "api_error",
      );
      assert.ok(!answer.text.includes("message_stop"), label);
      break;
    case "gemini":
      assert.match(last, /^data: /, label);
      errorMessageOf("gemini", data, status);
      break;
  }
}

/** Asserts that no provider key made it into the gateway's log records. */
function assertNoProviderKeyInLogs(h: Harness): void {
  const logs = JSON.stringify(h.logs);
  for (const key of Object.values(h.providerKeys).flat()) {
    assert.ok(!logs.includes(key), "a log record holds a provider key");
  }
}

Deno.test("a stream that breaks off after it began ends with the convention's in-stream error event", async () => {
  await using h = await startHarness({
    sim: {
      behaviour: { reply: "one two three four five six seven eight nine ten" },
    },
  });
  for (const call of CALLS) {
    h.sim.enqueue({ behaviour: { cutStreamAfter: 2 } });
    const answer = await sendCall(h, call, true);
    assert.equal(answer.status, 200, call.label);
    assert.match(
      answer.headers.get("content-type") ?? "",
      /text\/event-stream/,
    );
    // Something was relayed before the break.
    assert.ok(answer.text.trim().split(/\r?\n\r?\n/).length >= 2, call.label);
    assertStreamError(call.route, answer, call.label);
  }
  assertNoProviderKeyInLogs(h);
});

/**
 * An upstream for every provider whose streams end cleanly, without error,
 * but before their terminal event (as a proxy that drops the rest might).
 */
function truncatingUpstream(): Deno.HttpServer<Deno.NetAddr> {
  const frame = (data: unknown, event?: string) =>
    `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      await request.body?.cancel();
      const path = new URL(request.url).pathname;
      let body: string;
      if (path.endsWith("/chat/completions")) {
        body = frame({
          id: "c1",
          object: "chat.completion.chunk",
          created: 0,
          model: "m",
          choices: [{
            index: 0,
            delta: { content: "Hi" },
            finish_reason: null,
          }],
        });
      } else if (path.endsWith("/responses")) {
        body = frame(
          { type: "response.created", response: { id: "r1" } },
          "response.created",
        ) +
          frame(
            { type: "response.output_text.delta", delta: "Hi" },
            "response.output_text.delta",
          );
      } else if (path.endsWith("/v1/messages")) {
        body = frame({
          type: "message_start",
          message: {
            id: "m1",
            type: "message",
            role: "assistant",
            model: "m",
            content: [],
            stop_reason: null,
            usage: { input_tokens: 3, output_tokens: 0 },
          },
        }, "message_start") +
          frame({
            type: "content_block_start",
            index: 0,
            content_block: { type: "text", text: "" },
          }, "content_block_start") +
          frame({
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: "Hi" },
          }, "content_block_delta");
      } else {
        body = frame({
          candidates: [{
            content: { role: "model", parts: [{ text: "Hi" }] },
            index: 0,
          }],
        });
      }
      return new Response(body, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
}

Deno.test("a stream that ends cleanly before its terminal event ends with the convention's in-stream error event", async () => {
  await using upstream = truncatingUpstream();
  const base = `http://127.0.0.1:${upstream.addr.port}`;
  await using h = await startHarness({
    env: {
      OPENAI_BASE_URL: `${base}/v1`,
      XAI_BASE_URL: `${base}/v1`,
      OPENROUTER_BASE_URL: `${base}/api/v1`,
      ANTHROPIC_BASE_URL: base,
      GEMINI_BASE_URL: base,
    },
  });
  for (const call of CALLS) {
    const answer = await sendCall(h, call, true);
    assert.match(answer.text, /Hi/, call.label);
    assertStreamError(call.route, answer, call.label);
  }
  assertNoProviderKeyInLogs(h);
});

Deno.test("a stream cut short is read by an SSE parser as events ending in the error", async () => {
  await using h = await startHarness();
  h.sim.enqueue({ behaviour: { cutStreamAfter: 3 } });
  const answer = await send(
    h,
    "/v1/messages",
    callBody("messages", "claude-haiku-4-5", true),
  );
  const events = await readSse(
    new Response(answer.text, { headers: answer.headers }),
  );
  assert.equal(events[0].event, "message_start");
  assert.equal(events.at(-1)!.event, "error");
  assert.equal(events.filter((e) => e.event === "message_stop").length, 0);
});
