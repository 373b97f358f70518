import assert from "node:assert/strict";
import {
  aboutTheRequest,
  answerError,
  keyOutcomeOf,
  MAX_RETRY_AFTER_MS,
  nextMove,
  noKeyError,
  ruleOfAnswer,
  ruleOfThrown,
  TRANSIENT_RETRIES,
} from "./rules.ts";

const NONE = new Headers();
const SENDER = { requestId: "r", callerId: "ck_1" };

Deno.test("ruleOfAnswer() serves a 2xx, cools on a 429, leaves 401/403 to the pool, retries a 5xx, fails other 4xx", () => {
  assert.deepEqual(ruleOfAnswer(200, NONE), { action: "serve" });
  assert.deepEqual(ruleOfAnswer(201, NONE), { action: "serve" });
  assert.deepEqual(ruleOfAnswer(429, NONE), {
    action: "cool",
    retryAfterMs: undefined,
  });
  assert.deepEqual(ruleOfAnswer(401, NONE), { action: "refusal", status: 401 });
  assert.deepEqual(ruleOfAnswer(403, NONE), { action: "refusal", status: 403 });
  assert.deepEqual(ruleOfAnswer(500, NONE), { action: "transient" });
  assert.deepEqual(ruleOfAnswer(529, NONE), { action: "transient" });
  assert.deepEqual(ruleOfAnswer(400, NONE), { action: "fail", status: 400 });
  assert.deepEqual(ruleOfAnswer(404, NONE), { action: "fail", status: 404 });
});

Deno.test("ruleOfAnswer() reads a 429's retry-after in seconds or as a date, and ignores a bad one", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const with_ = (value: string) =>
    ruleOfAnswer(429, new Headers({ "retry-after": value }), now);
  assert.deepEqual(with_("3"), { action: "cool", retryAfterMs: 3_000 });
  assert.deepEqual(with_("Thu, 01 Jan 2026 00:00:10 GMT"), {
    action: "cool",
    retryAfterMs: 10_000,
  });
  assert.deepEqual(with_("Wed, 31 Dec 2025 00:00:00 GMT"), {
    action: "cool",
    retryAfterMs: 0,
  });
  assert.deepEqual(with_("soon"), { action: "cool", retryAfterMs: undefined });
});

Deno.test("ruleOfThrown() fails a timeout (504) and a caller gone (499), and treats no connection as transient", () => {
  const timedOut = new AbortController();
  timedOut.abort(new DOMException("late", "TimeoutError"));
  const gone = new AbortController();
  gone.abort(new DOMException("gone", "AbortError"));
  assert.deepEqual(ruleOfThrown(timedOut.signal), {
    action: "fail",
    status: 504,
  });
  assert.deepEqual(ruleOfThrown(gone.signal), { action: "fail", status: 499 });
  assert.deepEqual(ruleOfThrown(new AbortController().signal), {
    action: "transient",
  });
});

Deno.test("keyOutcomeOf() gives a key back by what its attempt met, naming the caller", () => {
  const sender = SENDER;
  assert.deepEqual(keyOutcomeOf({ action: "cool", retryAfterMs: 5 }, sender), {
    kind: "rateLimited",
    retryAfterMs: 5,
    requestId: "r",
    callerId: "ck_1",
  });
  assert.deepEqual(keyOutcomeOf({ action: "refusal", status: 403 }, sender), {
    kind: "refused",
    status: 403,
    requestId: "r",
    callerId: "ck_1",
  });
  assert.deepEqual(keyOutcomeOf({ action: "transient" }, sender), {
    kind: "failed",
  });
  assert.deepEqual(keyOutcomeOf({ action: "fail", status: 504 }, sender), {
    kind: "failed",
  });
  assert.deepEqual(
    keyOutcomeOf({ action: "requestRefused", status: 429 }, sender),
    { kind: "failed" },
  );
});

Deno.test("aboutTheRequest() blames the request for a worded 429 or 403 and for an own-limits 429, never for a 401", () => {
  const openaiWording = { requestRefusals: [/^Request too large\b/i] };
  assert.deepEqual(
    aboutTheRequest(
      { action: "cool", retryAfterMs: 3_600_000 },
      "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 90000.",
      openaiWording,
    ),
    { action: "requestRefused", status: 429 },
  );
  assert.deepEqual(
    aboutTheRequest(
      { action: "refusal", status: 403 },
      "Your chosen model requires moderation and your input was flagged",
      { requestRefusals: [/\binput was flagged\b/i] },
    ),
    { action: "requestRefused", status: 403 },
  );
  assert.deepEqual(
    aboutTheRequest(
      { action: "cool", retryAfterMs: 3_600_000 },
      "Too many counting requests",
      { ownRateLimits: true },
    ),
    { action: "skipKey", retryAfterMs: 3_600_000 },
  );
  // A 429 of the key's own limits, a 401 and a 403 in other words stay as they are.
  assert.deepEqual(
    aboutTheRequest({ action: "cool" }, "Rate limit reached", openaiWording),
    { action: "cool" },
  );
  assert.deepEqual(
    aboutTheRequest(
      { action: "refusal", status: 401 },
      "Request too large",
      openaiWording,
    ),
    { action: "refusal", status: 401 },
  );
  assert.equal(
    nextMove({ action: "requestRefused", status: 429 }, false, 0),
    "fail",
  );
  assert.equal(nextMove({ action: "skipKey" }, false, 0), "nextKey");
  assert.deepEqual(keyOutcomeOf({ action: "skipKey" }, SENDER), {
    kind: "failed",
  });
  const error = answerError(
    "anthropic",
    { action: "requestRefused", status: 403 },
    403,
    "flagged",
  );
  assert.equal(error.status, 403);
});

Deno.test("nextMove() rotates on a 429 and a refusal about the key, retries a transient failure once, and fails otherwise", () => {
  assert.equal(nextMove({ action: "serve" }, false, 0), "serve");
  assert.equal(nextMove({ action: "cool" }, false, 5), "nextKey");
  assert.equal(
    nextMove({ action: "refusal", status: 401 }, true, 0),
    "nextKey",
  );
  assert.equal(nextMove({ action: "refusal", status: 403 }, false, 0), "fail");
  assert.equal(nextMove({ action: "transient" }, false, 0), "nextKey");
  assert.equal(
    nextMove({ action: "transient" }, false, TRANSIENT_RETRIES),
    "fail",
  );
  assert.equal(nextMove({ action: "fail", status: 400 }, false, 0), "fail");
});

Deno.test("noKeyError() says when a key frees up, else what the attempts met, else that there is no key", () => {
  const cooled = noKeyError("openai", 30_000, {
    soonestCooledMs: 2_500,
    rateLimitMessage: "slow down",
  });
  assert.equal(cooled.status, 429);
  assert.equal(cooled.retryAfterSeconds, 3);
  assert.equal(cooled.message, "slow down");
  const none = noKeyError("xai", -1, {
    soonestCooledMs: Infinity,
    rateLimitMessage: "",
  });
  assert.equal(none.status, 503);
  assert.equal(none.code, "no_provider_key");
  const busy = noKeyError("xai", 4_200, {
    soonestCooledMs: Infinity,
    rateLimitMessage: "",
  });
  assert.equal(busy.status, 429);
  assert.equal(busy.retryAfterSeconds, 5);
});

Deno.test("ruleOfAnswer() caps a 429's retry-after at an hour, so a provider cannot take a key out for years", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const with_ = (value: string) =>
    ruleOfAnswer(429, new Headers({ "retry-after": value }), now);
  assert.equal(MAX_RETRY_AFTER_MS, 3_600_000);
  for (const value of ["1e300", "99999999", "Fri, 01 Jan 2100 00:00:00 GMT"]) {
    assert.deepEqual(with_(value), {
      action: "cool",
      retryAfterMs: MAX_RETRY_AFTER_MS,
    }, value);
  }
  assert.deepEqual(with_("3599"), { action: "cool", retryAfterMs: 3_599_000 });
});
