import assert from "node:assert/strict";
import {
  errorBody,
  GatewayError,
  openAIErrorType,
  streamErrorFrame,
} from "./errors.ts";

Deno.test("openAIErrorType() maps HTTP statuses to OpenAI error types", () => {
  assert.equal(openAIErrorType(400), "invalid_request_error");
  assert.equal(openAIErrorType(413), "invalid_request_error");
  assert.equal(openAIErrorType(401), "authentication_error");
  assert.equal(openAIErrorType(402), "insufficient_quota");
  assert.equal(openAIErrorType(403), "permission_error");
  assert.equal(openAIErrorType(404), "not_found_error");
  assert.equal(openAIErrorType(429), "rate_limit_error");
  assert.equal(openAIErrorType(503), "server_error");
});

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
