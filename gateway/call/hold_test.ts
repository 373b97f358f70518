import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { heldCacheWrite, holdFor, requireCredit } from "./hold.ts";
import type { CatalogEntry } from "../state/catalog.ts";

Deno.test("requireCredit() refuses a balance of zero or less with one 402 line naming what needed it, and lets a positive balance through", async () => {
  for (const balance of [0, -1_500_000]) {
    await assert.rejects(
      requireCredit(
        { balance: () => Promise.resolve(balance) },
        "ck_test",
        "creating a conversation",
      ),
      (error) => {
        assert.ok(error instanceof GatewayError);
        assert.equal(error.status, 402);
        assert.match(
          error.message,
          /^Insufficient credits: creating a conversation needs a balance above zero, and the balance is \$-?[\d.]+; add credits$/,
        );
        return true;
      },
    );
  }
  await requireCredit(
    { balance: () => Promise.resolve(1) },
    "ck_test",
    "counting tokens",
  );
});

Deno.test("heldCacheWrite() reads a body of a million messages (no spread of them onto the call stack)", () => {
  const messages: unknown[] = Array.from({ length: 1_000_000 }, () => ({
    role: "user",
    content: "hi",
  }));
  assert.equal(heldCacheWrite({ messages }), "none");
  messages.push({
    role: "user",
    content: [{
      type: "text",
      text: "x",
      cache_control: { type: "ephemeral" },
    }],
  });
  assert.equal(heldCacheWrite({ messages }), "5m");
});

Deno.test("holdFor() holds stored context at the model's window, and refuses it with a 400 on a model without one", () => {
  const entry = {
    id: "m",
    provider: "openai",
    upstream: "m",
    routes: ["responses"],
    pricing: { input: 1, output: 2 },
    maxOutputTokens: 1_000,
    contextWindow: 100_000,
  } as CatalogEntry;
  const parsed = { maxOutputTokens: 100, choices: 1, predictedTokens: 0 };
  // 99,900 input at $1 and 100 output at $2 per million.
  assert.equal(
    holdFor([entry], 10, parsed, undefined, "none", true).amount,
    100_100,
  );
  assert.equal(holdFor([entry], 10, parsed).amount, 210);
  const { contextWindow: _, ...unbounded } = entry;
  assert.throws(
    () => holdFor([unbounded], 10, parsed, undefined, "none", true),
    (error) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.status, 400);
      assert.equal(error.code, "stored_context_unbounded");
      assert.match(error.message, /^Model "m" has no context window/);
      return true;
    },
  );
  // The same call naming nothing stored is held as before.
  assert.equal(holdFor([unbounded], 10, parsed).amount, 210);
});
