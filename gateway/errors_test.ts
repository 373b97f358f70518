import assert from "node:assert/strict";
import { Hono } from "hono";
import {
  errorBody,
  GatewayError,
  renderErrors,
  setRoute,
  streamErrorFrame,
  toGatewayError,
} from "./errors.ts";
import { StoreUnavailableError } from "./state/store/outage.ts";

Deno.test("errorBody() writes each route's convention", () => {
  const error = new GatewayError(429, "Slow down", { retryAfterSeconds: 3 });
  assert.deepEqual(errorBody("chat", error), {
    error: {
      message: "Slow down",
      type: "rate_limit_error",
      param: null,
      code: "rate_limited",
    },
  });
  assert.deepEqual(errorBody("messages", error), {
    type: "error",
    error: { type: "rate_limit_error", message: "Slow down" },
  });
  assert.deepEqual(errorBody("gemini", error), {
    error: { code: 429, message: "Slow down", status: "RESOURCE_EXHAUSTED" },
  });
});

Deno.test("streamErrorFrame() writes each route's in-stream error event", () => {
  const error = new GatewayError(502, "Cut off", { code: "upstream_error" });
  assert.equal(
    streamErrorFrame("messages", error),
    `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"Cut off"}}\n\n`,
  );
  assert.equal(
    streamErrorFrame("responses", error),
    `event: error\ndata: {"type":"error","code":"upstream_error","message":"Cut off","param":null}\n\n`,
  );
  assert.match(
    streamErrorFrame("chat", error),
    /^data: \{"error":\{"message":"Cut off","type":"server_error"/,
  );
  assert.match(
    streamErrorFrame("gemini", error),
    /^data: \{"error":\{"code":502,"message":"Cut off","status":"UNAVAILABLE"\}\}/,
  );
});

Deno.test("renderErrors() turns a bug into a 500 naming the request id, and a GatewayError into its convention", async () => {
  const logged: Record<string, unknown>[] = [];
  const app = new Hono<{ Variables: { requestId: string } }>();
  app.use(async (c, next) => {
    c.set("requestId", "req_test");
    await next();
  });
  app.onError(renderErrors((record) => logged.push(record)));
  app.use("/messages", setRoute("messages"));
  app.post("/chat/completions", () => {
    throw new RangeError('Invalid token count "-1" for "inputTokens"');
  });
  app.post("/messages", () => {
    throw new GatewayError(402, "Insufficient credits");
  });
  const bug = await app.request("/chat/completions", { method: "POST" });
  assert.equal(bug.status, 500);
  const body = await bug.json();
  assert.match(body.error.message, /req_test/);
  assert.doesNotMatch(body.error.message, /token count/);
  assert.equal(logged.length, 1);
  assert.match(String(logged[0].message), /token count/);
  const refused = await app.request("/messages", { method: "POST" });
  assert.equal(refused.status, 402);
  assert.equal((await refused.json()).error.type, "billing_error");
  assert.equal(logged.length, 1);
});

Deno.test("toGatewayError() answers a store that cannot be reached with a 503 and retry-after, not a 500", () => {
  for (const code of ["CONNECTION_CLOSED", "ECONNREFUSED", "57P01"]) {
    const thrown = Object.assign(new Error(`write ${code}`), { code });
    const error = toGatewayError(thrown, "req_1");
    assert.equal(error.status, 503, code);
    assert.equal(error.code, "store_unavailable");
    assert.equal(error.retryAfterSeconds, 1);
  }
  assert.equal(toGatewayError(new TypeError("x"), "req_1").status, 500);
});

Deno.test("toGatewayError() answers a store still unreachable past the wait with a 503 that says how long, and retry-after: 5", () => {
  const error = toGatewayError(new StoreUnavailableError(61_000), "req_1");
  assert.equal(error.status, 503);
  assert.equal(error.code, "store_unavailable");
  assert.equal(error.retryAfterSeconds, 5);
  assert.match(error.message, /unreachable for 61 s/);
});
