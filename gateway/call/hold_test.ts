import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { heldCacheWrite, requireCredit } from "./hold.ts";

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
