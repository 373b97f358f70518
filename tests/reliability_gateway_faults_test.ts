/**
 * Upstream faults and callers that walk away: each case drives a real gateway
 * in front of the provider simulator and checks three things: what the caller
 * got (the documented status, or the convention's in-stream error), that the
 * upstream request was cancelled where it should be, and that KV money is
 * exact afterwards (ledger sums to the balance, no reservation left open).
 * Test sanitizers stay on: a leaked timer, socket or stream fails the test.
 */
import assert from "node:assert/strict";
import { deadlines } from "../gateway/upstream/deadlines.ts";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";
import { errorMessageOf, readSse } from "./_gateway_routes.ts";
import { startHarness } from "./_gateway_harness.ts";
import { assertLedgerExact } from "./fixtures/reliability_ledger.ts";
import type { RouteName } from "../gateway/conventions.ts";

const OPENING_MICROS = 100_000_000;

/** One model per route, each on a different provider family where possible. */
/** How many models a call to `model` may try: itself and its catalog alternates. */
function candidates(model: string): number {
  const entry = DEFAULT_CATALOG.find((e) => e.id === model)!;
  return 1 + (entry.alternates?.length ?? 0);
}

const CASES: {
  route: RouteName;
  model: string;
  path: string;
  streamPath: string;
}[] = [
  {
    route: "chat",
    model: "gpt-4o",
    path: "/v1/chat/completions",
    streamPath: "/v1/chat/completions",
  },
  {
    route: "chat",
    model: "claude-sonnet-5-5",
    path: "/v1/chat/completions",
    streamPath: "/v1/chat/completions",
  },
  {
    route: "chat",
    model: "gemini-2.5-pro",
    path: "/v1/chat/completions",
    streamPath: "/v1/chat/completions",
  },
  {
    route: "messages",
    model: "claude-haiku-4-5",
    path: "/v1/messages",
    streamPath: "/v1/messages",
  },
  {
    route: "responses",
    model: "gpt-5-mini",
    path: "/v1/responses",
    streamPath: "/v1/responses",
  },
  {
    route: "gemini",
    model: "gemini-2.5-computer-use-preview",
    path: "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
    streamPath:
      "/v1beta/models/gemini-2.5-computer-use-preview:streamGenerateContent?alt=sse",
  },
];

function body(
  route: RouteName,
  model: string,
  stream: boolean,
  text = "hello",
) {
  switch (route) {
    case "chat":
      return { model, stream, messages: [{ role: "user", content: text }] };
    case "messages":
      return {
        model,
        stream,
        max_tokens: 256,
        messages: [{ role: "user", content: text }],
      };
    case "responses":
      return { model, stream, input: text, max_output_tokens: 256 };
    case "gemini":
      return { contents: [{ role: "user", parts: [{ text }] }] };
  }
}

/** The error event a stream ends with, in the route's convention. */
function streamError(
  route: RouteName,
  events: { event?: string; data: string }[],
) {
  const last = events.at(-1);
  assert.ok(last, "the stream sent at least one event");
  const json = JSON.parse(last.data);
  if (route === "responses") {
    assert.equal(last.event, "error");
    assert.equal(json.type, "error");
    return json.message as string;
  }
  if (route === "messages") assert.equal(last.event, "error");
  return errorMessageOf(route, json, route === "gemini" ? json.error.code : 0);
}

Deno.test("a 429 storm on every provider key answers 429 with retry-after, tries each key once and charges nothing", async () => {
  await using h = await startHarness({
    sim: { behaviour: { status: 429, retryAfter: 7 } },
  });
  for (const c of CASES) {
    for (const stream of [false, true]) {
      h.sim.clear();
      const label = `${c.model} on ${c.route} stream=${stream}`;
      const response = await h.post(
        stream ? c.streamPath : c.path,
        body(c.route, c.model, stream),
      );
      const text = await response.text();
      assert.equal(response.status, 429, `${label}: ${text}`);
      errorMessageOf(c.route, JSON.parse(text), 429);
      assert.ok(Number(response.headers.get("retry-after")) >= 1, label);
      // The first call of a provider tries both keys; later ones find them
      // cooling down. A model with catalog alternates tries theirs too.
      const keys = new Set(h.sim.requests.map((r) => r.key));
      assert.equal(
        keys.size,
        h.sim.requests.length,
        `${label}: no key tried twice`,
      );
      assert.ok(h.sim.requests.length <= 2 * candidates(c.model), label);
    }
  }
  const money = await assertLedgerExact(h.kv, h.caller.id);
  assert.equal(money.balanceMicros, OPENING_MICROS);
  assert.deepEqual(money.charges, [], "a refused call writes no ledger entry");
});

Deno.test("an upstream 500 or 503 becomes a 502 in the route's convention and charges nothing", async () => {
  await using h = await startHarness();
  for (const c of CASES) {
    for (const status of [500, 503]) {
      for (const stream of [false, true]) {
        const label = `${c.model} on ${c.route} ${status} stream=${stream}`;
        // Every key of every candidate fails: each provider's two keys (a
        // 5xx is tried on a second key), for the model and its alternates.
        for (let i = 0; i < 2 * candidates(c.model); i++) {
          h.sim.enqueue({ behaviour: { status } });
        }
        const response = await h.post(
          stream ? c.streamPath : c.path,
          body(c.route, c.model, stream),
        );
        const text = await response.text();
        assert.equal(response.status, 502, `${label}: ${text}`);
        errorMessageOf(c.route, JSON.parse(text), 502);
      }
    }
  }
  assert.equal(h.sim.pending, 0);
  const money = await assertLedgerExact(h.kv, h.caller.id);
  assert.equal(money.balanceMicros, OPENING_MICROS);
  assert.deepEqual(money.charges, []);
});

Deno.test("an upstream that hangs past the timeout gives 504, is cancelled, and is charged its prompt's estimate, not $0", async () => {
  await using h = await startHarness({
    sim: { behaviour: { hang: true } },
    env: { GATEWAY_UPSTREAM_TIMEOUT_MS: "200" },
  });
  for (const c of CASES) {
    for (const stream of [false, true]) {
      const label = `${c.model} on ${c.route} stream=${stream}`;
      const aborted = h.sim.aborted;
      const recorded = h.sim.requests.length;
      const started = Date.now();
      const response = await h.post(
        stream ? c.streamPath : c.path,
        body(c.route, c.model, stream),
      );
      const text = await response.text();
      assert.equal(response.status, 504, `${label}: ${text}`);
      errorMessageOf(c.route, JSON.parse(text), 504);
      assert.ok(
        Date.now() - started < 2000 * candidates(c.model),
        `${label}: answered near the timeout`,
      );
      // A model with alternates times out on each (a timeout is not retried
      // on another key of the same provider): each candidate was sent once,
      // and each was cancelled: no upstream request outlives its timeout.
      await h.sim.waitFor(() =>
        h.sim.requests.length === recorded + candidates(c.model) &&
        h.sim.aborted === aborted + candidates(c.model)
      );
      assert.deepEqual(
        h.sim.requests.slice(recorded).map((r) => `${r.path} ${r.aborted}`),
        h.sim.requests.slice(recorded).map((r) => `${r.path} true`),
        `${label}: every candidate's request cancelled`,
      );
    }
  }
  // The provider read each prompt: every call is charged its input
  // estimate, once, and no output.
  const money = await assertLedgerExact(h.kv, h.caller.id);
  assert.equal(money.charges.length, CASES.length * 2);
  for (const charge of money.charges) {
    assert.ok(charge.amountMicros < 0, JSON.stringify(charge));
    assert.ok(charge.inputTokens! > 0, JSON.stringify(charge));
    assert.equal(charge.outputTokens, 0);
  }
  assert.ok(money.balanceMicros < OPENING_MICROS);
});

Deno.test("a non-streamed call its caller abandons after it reached the provider is charged its prompt's estimate, not $0", async () => {
  await using h = await startHarness({ sim: { behaviour: { hang: true } } });
  for (const c of CASES) {
    const aborted = h.sim.aborted;
    const recorded = h.sim.requests.length;
    const leave = new AbortController();
    const response = fetch(h.url + c.path, {
      method: "POST",
      headers: { "content-type": "application/json", ...h.auth() },
      body: JSON.stringify(body(c.route, c.model, false)),
      signal: leave.signal,
    });
    // The provider has the request once the simulator counts it.
    await h.sim.waitFor(() => h.sim.requests.length > recorded);
    leave.abort();
    await assert.rejects(response);
    await h.sim.waitFor(() => h.sim.aborted === aborted + 1);
  }
  // Settlement commits behind the handler; wait for every charge.
  for (let i = 0;; i++) {
    const money = await assertLedgerExact(h.kv, h.caller.id).catch(() =>
      undefined
    );
    if (money?.charges.length === CASES.length) {
      for (const charge of money.charges) {
        assert.ok(charge.amountMicros < 0, JSON.stringify(charge));
        assert.ok(charge.inputTokens! > 0, JSON.stringify(charge));
        assert.equal(charge.outputTokens, 0);
      }
      break;
    }
    assert.ok(i < 50, `charges: ${JSON.stringify(money?.charges)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

Deno.test("an upstream answering a body that is not JSON gives 502, or an in-stream error once streaming, and charges nothing", async () => {
  await using h = await startHarness({ sim: { behaviour: { garbage: true } } });
  for (const c of CASES) {
    const label = `${c.model} on ${c.route}`;
    const response = await h.post(c.path, body(c.route, c.model, false));
    const text = await response.text();
    assert.equal(response.status, 502, `${label}: ${text}`);
    assert.match(
      errorMessageOf(c.route, JSON.parse(text), 502),
      /not JSON|unexpected/,
    );

    const streamed = await h.post(c.streamPath, body(c.route, c.model, true));
    const streamedText = await streamed.text();
    // Garbage may be caught before the first byte (a 502) or inside the stream.
    if (streamed.status === 502) {
      errorMessageOf(c.route, JSON.parse(streamedText), 502);
    } else {
      assert.equal(streamed.status, 200, `${label}: ${streamedText}`);
      assert.ok(
        !streamedText.includes("not json at all"),
        `${label}: the garbage event is not relayed`,
      );
      const events = await readSse(
        new Response(streamedText, { headers: streamed.headers }),
      );
      assert.match(
        streamError(c.route, events),
        /before it was complete|not JSON|failed/,
        `${label}: ${streamedText}`,
      );
    }
  }
  const money = await assertLedgerExact(h.kv, h.caller.id);
  assert.equal(money.balanceMicros, OPENING_MICROS);
  assert.deepEqual(money.charges, []);
});

Deno.test("a connection reset mid-stream ends the caller's stream with the convention's error event and bills what was relayed", async () => {
  await using h = await startHarness({
    sim: {
      behaviour: {
        cutStreamAfter: 3,
        reply: "one two three four five six seven eight nine ten",
      },
    },
  });
  for (const c of CASES) {
    if (c.route === "gemini") continue; // Gemini's REST array stream has no SSE error event; the SSE form is below.
    const label = `${c.model} on ${c.route}`;
    const before = await assertLedgerExact(h.kv, h.caller.id);
    const response = await h.post(c.streamPath, body(c.route, c.model, true));
    assert.equal(response.status, 200, label);
    const events = await readSse(response);
    assert.match(
      streamError(c.route, events),
      /broke off|could not be reached|stream/,
      label,
    );
    const after = await assertLedgerExact(h.kv, h.caller.id);
    assert.equal(
      after.charges.length,
      before.charges.length + 1,
      `${label}: one charge`,
    );
    const charge = after.charges[0];
    assert.ok(charge.amountMicros <= 0, label);
    assert.equal(charge.model, c.model, label);
  }
  const gemini = CASES.at(-1)!;
  const response = await h.post(
    gemini.streamPath,
    body("gemini", gemini.model, true),
  );
  assert.equal(response.status, 200);
  const events = await readSse(response);
  assert.match(
    streamError("gemini", events),
    /broke off|could not be reached|stream/,
  );
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("a slow stream within the idle timeout completes and is billed in full", async () => {
  await using h = await startHarness({
    sim: {
      behaviour: {
        chunkDelayMs: 60,
        reply: "slow but steady words arrive",
        usage: { outputTokens: 9 },
      },
    },
    env: { GATEWAY_UPSTREAM_TIMEOUT_MS: "400" },
  });
  const response = await h.post(
    "/v1/chat/completions",
    body("chat", "gpt-4o", true),
  );
  assert.equal(response.status, 200);
  const events = await readSse(response);
  assert.equal(events.at(-1)?.data, "[DONE]");
  const money = await assertLedgerExact(h.kv, h.caller.id);
  assert.equal(money.charges.length, 1);
  assert.equal(money.charges[0].outputTokens, 9);
  assert.ok(money.charges[0].amountMicros < 0);
  assert.equal(
    money.balanceMicros,
    OPENING_MICROS + money.charges[0].amountMicros,
  );
});

Deno.test("a stream that stalls past the idle timeout ends with a 504 error event, cancels upstream and bills what was relayed", async () => {
  await using h = await startHarness({
    sim: { behaviour: { chunkDelayMs: 1500, reply: "a b c d e f" } },
    env: { GATEWAY_UPSTREAM_TIMEOUT_MS: "300" },
  });
  for (const c of CASES.filter((c) => c.route !== "gemini")) {
    const aborted = h.sim.aborted;
    const response = await h.post(c.streamPath, body(c.route, c.model, true));
    assert.equal(response.status, 200);
    const events = await readSse(response);
    assert.match(
      streamError(c.route, events),
      /did not answer in time/,
      c.model,
    );
    await h.sim.waitFor(() => h.sim.aborted === aborted + 1);
  }
  await assertLedgerExact(h.kv, h.caller.id);
});

Deno.test("a caller that disconnects mid-stream cancels the upstream, is billed for what was generated, and leaks nothing", async () => {
  await using h = await startHarness({
    sim: {
      behaviour: {
        chunkDelayMs: 40,
        reply: Array.from({ length: 60 }, (_, i) => `word${i}`).join(" "),
      },
    },
  });
  for (
    const c of CASES.filter((c) => c.route !== "gemini").concat(CASES.at(-1)!)
  ) {
    const label = `${c.model} on ${c.route}`;
    const before = await assertLedgerExact(h.kv, h.caller.id);
    const aborted = h.sim.aborted;
    const controller = new AbortController();
    const response = await fetch(h.url + c.streamPath, {
      method: "POST",
      headers: { "content-type": "application/json", ...h.auth() },
      body: JSON.stringify(body(c.route, c.model, true)),
      signal: controller.signal,
    });
    assert.equal(response.status, 200, label);
    const reader = response.body!.getReader();
    let received = 0;
    while (received < 3) {
      const { done } = await reader.read();
      assert.ok(!done, `${label}: the stream is still running`);
      received++;
    }
    controller.abort();
    await reader.cancel().catch(() => {});
    await h.sim.waitFor(() => h.sim.aborted === aborted + 1, 3000);
    const after = await assertLedgerExact(h.kv, h.caller.id);
    assert.equal(
      after.charges.length,
      before.charges.length + 1,
      `${label}: one charge`,
    );
    const charge = after.charges[0];
    assert.ok(
      charge.outputTokens! > 0,
      `${label}: billed for the tokens generated`,
    );
    assert.ok(charge.amountMicros < 0, label);
    assert.ok(
      charge.outputTokens! < 60,
      `${label}: not billed for tokens never generated`,
    );
  }
  // Every stream left the shared idle watch (it holds none after its end).
  assert.equal(deadlines.size, 0);
});
