import assert from "node:assert/strict";
import {
  ERROR_BODIES,
  errorTypeOf,
  FALLBACK_ROUTE,
  openAIErrorType,
  ROUTE_CONVENTIONS,
} from "./conventions.ts";

Deno.test("errorTypeOf() names each convention's documented statuses", () => {
  const cases: [number, string, string, string][] = [
    [400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"],
    [401, "authentication_error", "authentication_error", "UNAUTHENTICATED"],
    [402, "insufficient_quota", "billing_error", "RESOURCE_EXHAUSTED"],
    [403, "permission_error", "permission_error", "PERMISSION_DENIED"],
    [404, "not_found_error", "not_found_error", "NOT_FOUND"],
    [413, "invalid_request_error", "request_too_large", "INVALID_ARGUMENT"],
    [429, "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"],
    [500, "server_error", "api_error", "INTERNAL"],
    [502, "server_error", "api_error", "UNAVAILABLE"],
    [503, "server_error", "api_error", "UNAVAILABLE"],
    [504, "server_error", "timeout_error", "DEADLINE_EXCEEDED"],
    [529, "server_error", "overloaded_error", "INTERNAL"],
  ];
  for (const [status, openai, anthropic, google] of cases) {
    assert.equal(errorTypeOf("openai", status), openai, `openai ${status}`);
    assert.equal(errorTypeOf("anthropic", status), anthropic, `${status}`);
    assert.equal(errorTypeOf("google", status), google, `google ${status}`);
  }
});

Deno.test("errorTypeOf() gives unnamed statuses their class's category, and a non-error status its own", () => {
  assert.equal(errorTypeOf("openai", 418), "invalid_request_error");
  assert.equal(errorTypeOf("anthropic", 499), "invalid_request_error");
  assert.equal(errorTypeOf("google", 422), "INVALID_ARGUMENT");
  assert.equal(errorTypeOf("openai", 599), "server_error");
  assert.equal(errorTypeOf("anthropic", 507), "api_error");
  assert.equal(errorTypeOf("google", 501), "INTERNAL");
  // Only a misbehaving upstream reports these as errors.
  assert.equal(errorTypeOf("openai", 302), "server_error");
  assert.equal(errorTypeOf("anthropic", 0), "invalid_request_error");
  assert.equal(errorTypeOf("google", 200), "INVALID_ARGUMENT");
});

Deno.test("ERROR_BODIES write each convention's body", () => {
  const error = {
    status: 429,
    message: "Slow down",
    code: "rate_limited",
    param: null,
  };
  assert.deepEqual(ERROR_BODIES.openai(error), {
    error: {
      message: "Slow down",
      type: "rate_limit_error",
      param: null,
      code: "rate_limited",
    },
  });
  assert.deepEqual(ERROR_BODIES.anthropic(error), {
    type: "error",
    error: { type: "rate_limit_error", message: "Slow down" },
  });
  assert.deepEqual(ERROR_BODIES.google(error), {
    error: { code: 429, message: "Slow down", status: "RESOURCE_EXHAUSTED" },
  });
});

Deno.test("ROUTE_CONVENTIONS maps each route to its provider's convention and the fallback is OpenAI's", () => {
  assert.equal(ROUTE_CONVENTIONS.chat.convention, "openai");
  assert.equal(ROUTE_CONVENTIONS.responses.convention, "openai");
  assert.equal(ROUTE_CONVENTIONS.messages.convention, "anthropic");
  assert.equal(ROUTE_CONVENTIONS.gemini.convention, "google");
  assert.equal(ROUTE_CONVENTIONS[FALLBACK_ROUTE].convention, "openai");
});

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
