import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { checkStaticLimits, limitsSchema, windowOf } from "./limits.ts";

Deno.test("windowOf() gives calendar windows in UTC: minutes, days, weeks from Monday, months", () => {
  const now = Date.parse("2026-11-25T13:45:12.345Z"); // a Wednesday
  assert.deepEqual(windowOf("minute", now), {
    start: Date.parse("2026-11-25T13:45:00Z"),
    end: Date.parse("2026-11-25T13:46:00Z"),
  });
  assert.deepEqual(windowOf("day", now), {
    start: Date.parse("2026-11-25T00:00:00Z"),
    end: Date.parse("2026-11-26T00:00:00Z"),
  });
  assert.deepEqual(windowOf("week", now), {
    start: Date.parse("2026-11-23T00:00:00Z"),
    end: Date.parse("2026-11-30T00:00:00Z"),
  });
  assert.deepEqual(windowOf("week", Date.parse("2026-11-29T23:59:59Z")), {
    start: Date.parse("2026-11-23T00:00:00Z"),
    end: Date.parse("2026-11-30T00:00:00Z"),
  });
  assert.deepEqual(windowOf("month", now), {
    start: Date.parse("2026-11-01T00:00:00Z"),
    end: Date.parse("2026-12-01T00:00:00Z"),
  });
  assert.deepEqual(windowOf("month", Date.parse("2026-12-31T12:00:00Z")), {
    start: Date.parse("2026-12-01T00:00:00Z"),
    end: Date.parse("2027-01-01T00:00:00Z"),
  });
});

Deno.test("checkStaticLimits() refuses an expired key with 401 and a model off the allowlist with 403", () => {
  const now = Date.parse("2026-11-23T12:00:00Z");
  const expired = { expiresAt: "2026-11-23T11:59:59Z" };
  assert.throws(
    () => checkStaticLimits(expired, "gpt-4o", now),
    (error: unknown) =>
      error instanceof GatewayError && error.status === 401 &&
      /expired at 2026-11-23T11:59:59Z/.test(error.message),
  );
  checkStaticLimits({ expiresAt: "2026-11-23T12:00:01Z" }, "gpt-4o", now);
  assert.throws(
    () => checkStaticLimits({ models: ["gpt-4o-mini"] }, "gpt-4o", now),
    (error: unknown) =>
      error instanceof GatewayError && error.status === 403 &&
      /may call: gpt-4o-mini/.test(error.message),
  );
  checkStaticLimits(undefined, "gpt-4o", now);
});

Deno.test("limitsSchema takes the documented shape and refuses anything else, naming it", () => {
  assert.ok(
    limitsSchema.safeParse({
      rpm: 60,
      tpm: 100000,
      spend: { amount: 5, period: "day" },
      models: ["gpt-4o-mini"],
      expiresAt: "2026-12-31T00:00:00Z",
    }).success,
  );
  assert.ok(!limitsSchema.safeParse({ rpm: 0 }).success);
  assert.ok(
    !limitsSchema.safeParse({ spend: { amount: 5, period: "year" } }).success,
  );
  assert.ok(!limitsSchema.safeParse({ rmp: 5 }).success);
  assert.ok(!limitsSchema.safeParse({ expiresAt: "tomorrow" }).success);
});
