/**
 * Every catalog model on every route: served on its own routes (streamed and
 * not, bare and under `/v1`, upstream model id on the right provider path),
 * refused on the others in each route's error convention.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG, modelStatus } from "../gateway/state/catalog.ts";
import { startHarness } from "./_gateway_harness.ts";
import {
  answerText,
  assertRouteError,
  callBody,
  callPath,
  PREFIXES,
  PROMPT,
  readSse,
  ROUTES,
  streamedText,
  upstreamTarget,
} from "./_gateway_routes.ts";

/** The catalog's models not yet retired today (a retired one answers 410: tests/gateway_lifecycle_test.ts). */
const SERVED = DEFAULT_CATALOG.filter((entry) =>
  modelStatus(entry, Date.now()) !== "retired"
);

Deno.test("every catalog model answers on each of its routes, streamed and not, bare and under /v1", async () => {
  await using h = await startHarness();
  let calls = 0;
  for (const entry of SERVED) {
    for (const route of entry.routes) {
      for (const stream of [false, true]) {
        for (const prefix of PREFIXES) {
          const label =
            `${entry.id} on ${route} at "${prefix}" stream=${stream}`;
          const before = h.sim.requests.length;
          const response = await h.post(
            prefix + callPath(route, entry.id, stream),
            callBody(route, entry.id, stream),
          );
          assert.equal(response.status, 200, `${label}: ${response.status}`);
          const text = stream
            ? streamedText(route, await readSse(response))
            : answerText(route, await response.json());
          assert.equal(text, `Echo: ${PROMPT}`, label);

          assert.equal(h.sim.requests.length, before + 1, label);
          const upstream = h.sim.requests[before];
          const target = upstreamTarget(entry, route, stream);
          assert.equal(upstream.provider, entry.provider, label);
          assert.equal(upstream.path, target.path, label);
          assert.equal(upstream.query.alt, target.alt, label);
          if (entry.provider !== "gemini") {
            const body = upstream.body as { model: string };
            assert.equal(body.model, entry.upstream, label);
          }
          calls++;
        }
      }
    }
  }
  // Every route of every served model (16 on chat, 5 on messages, 5 on
  // responses and 1 on gemini before claude-sonnet-4-5 retires); × 2 × 2.
  const routes = SERVED.reduce((sum, entry) => sum + entry.routes.length, 0);
  assert.ok(routes >= 25, `only ${routes} routes served`);
  assert.equal(calls, routes * 4);
});

Deno.test("the upstream receives the upstream model id, not the catalog id", async () => {
  await using h = await startHarness();
  const operator = await h.post("/v1/responses", {
    model: "operator",
    input: "click the button",
  });
  assert.equal(operator.status, 200);
  const answer = await operator.json();
  // The answer is passed through untouched, upstream model id included.
  assert.equal(answer.model, "computer-use-preview");
  assert.equal(h.sim.requests[0].path, "/openai/v1/responses");
  assert.equal(
    (h.sim.requests[0].body as { model: string }).model,
    "computer-use-preview",
  );

  const gemini = await h.post(
    "/v1beta/models/gemini-2.5-computer-use-preview:generateContent",
    callBody("gemini", "", false),
  );
  assert.equal(gemini.status, 200);
  await gemini.body?.cancel();
  assert.equal(
    h.sim.requests[1].path,
    "/gemini/v1beta/models/gemini-2.5-computer-use-preview-10-2025:generateContent",
  );
});

Deno.test("every model is refused with 400 naming its routes on each route it does not list, in that route's convention", async () => {
  await using h = await startHarness();
  let refusals = 0;
  for (const entry of SERVED) {
    for (const route of ROUTES.filter((r) => !entry.routes.includes(r))) {
      for (const stream of [false, true]) {
        for (const prefix of PREFIXES) {
          const label =
            `${entry.id} on ${route} at "${prefix}" stream=${stream}`;
          const response = await h.post(
            prefix + callPath(route, entry.id, stream),
            callBody(route, entry.id, stream),
          );
          const message = await assertRouteError(route, response, 400);
          assert.ok(message.includes(`"${entry.id}"`), `${label}: ${message}`);
          for (const listed of entry.routes) {
            assert.ok(message.includes(listed), `${label}: ${message}`);
          }
          refusals++;
        }
      }
    }
  }
  assert.equal(
    refusals,
    SERVED.reduce((sum, entry) => sum + (4 - entry.routes.length) * 4, 0),
  );
  assert.equal(h.sim.requests.length, 0, "nothing refused reaches a provider");
});

Deno.test("an unknown model gets 404 on every route, in that route's convention", async () => {
  await using h = await startHarness();
  for (const route of ROUTES) {
    for (const stream of [false, true]) {
      for (const prefix of PREFIXES) {
        const response = await h.post(
          prefix + callPath(route, "no-such-model", stream),
          callBody(route, "no-such-model", stream),
        );
        const message = await assertRouteError(route, response, 404);
        assert.match(message, /"no-such-model"/);
      }
    }
  }
  assert.equal(h.sim.requests.length, 0);
});

Deno.test("the chat route's OpenAI error names the model parameter", async () => {
  await using h = await startHarness();
  const response = await h.post(
    "/v1/chat/completions",
    callBody("chat", "operator", false),
  );
  await assertRouteError("chat", response.clone(), 400);
  const { error } = await response.json();
  assert.equal(error.param, "model");
  assert.equal(error.type, "invalid_request_error");
});

Deno.test("GET /models lists the catalog with routes and prices per million tokens, bare and under /v1", async () => {
  await using h = await startHarness();
  for (const prefix of PREFIXES) {
    const response = await fetch(`${h.url}${prefix}/models`);
    assert.equal(response.status, 200);
    const list = await response.json();
    assert.equal(list.object, "list");
    assert.deepEqual(
      list.data.map((m: { id: string }) => m.id),
      DEFAULT_CATALOG.map((e) => e.id),
    );
    for (const [index, entry] of DEFAULT_CATALOG.entries()) {
      const model = list.data[index];
      assert.equal(model.object, "model");
      assert.equal(model.owned_by, entry.provider);
      assert.deepEqual(model.routes, entry.routes);
      assert.equal(model.pricing.input, entry.pricing.input);
      assert.equal(model.pricing.output, entry.pricing.output);
      assert.equal(typeof model.pricing.input, "number");
      // The upstream id is the gateway's business, not the caller's.
      assert.equal(model.upstream, undefined);
    }
  }
});

Deno.test("GET /health answers ok without a key, bare and under /v1", async () => {
  await using h = await startHarness();
  for (const prefix of PREFIXES) {
    const response = await fetch(`${h.url}${prefix}/health`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { ok: true });
  }
});

Deno.test("an unknown path gets 404 and a Gemini path with an unknown method gets 404 in Google's convention", async () => {
  await using h = await startHarness();
  const unknown = await h.post("/v1/completions", { model: "gpt-4o" });
  await assertRouteError("chat", unknown, 404);
  const method = await h.post(
    // countTokens is served now; embedContent is not.
    "/v1beta/models/gemini-2.5-computer-use-preview:embedContent",
    callBody("gemini", "", false),
  );
  await assertRouteError("gemini", method, 404);
});

Deno.test("Gemini's streamGenerateContent without alt=sse answers one JSON array of chunks, as Google's REST API does", async () => {
  await using h = await startHarness({
    sim: { behaviour: { reply: "red orange yellow green blue indigo violet" } },
  });
  const response = await h.post(
    "/v1beta/models/gemini-2.5-computer-use-preview:streamGenerateContent",
    callBody("gemini", "", true),
  );
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  const chunks = await response.json();
  assert.ok(Array.isArray(chunks) && chunks.length >= 2);
  assert.equal(
    chunks.map((
      c: { candidates: { content: { parts: { text: string }[] } }[] },
    ) => c.candidates[0].content.parts.map((p) => p.text).join("")).join(""),
    "red orange yellow green blue indigo violet",
  );
  assert.equal(chunks.at(-1).candidates[0].finishReason, "STOP");
});
