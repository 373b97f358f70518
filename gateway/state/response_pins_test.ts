import assert from "node:assert/strict";
import { findPin, pinState, stateRefsOf } from "./response_pins.ts";
import { responsePinKey } from "./kv_keys.ts";

Deno.test("stateRefsOf() reads previous_response_id, a conversation id or object, and store: false, and ignores ids no provider gives", () => {
  assert.deepEqual(stateRefsOf({}), { stored: true });
  assert.deepEqual(
    stateRefsOf({
      previous_response_id: "resp_abc-1",
      conversation: "conv_1",
      store: false,
    }),
    {
      previousResponseId: "resp_abc-1",
      conversationId: "conv_1",
      stored: false,
    },
  );
  assert.deepEqual(stateRefsOf({ conversation: { id: "conv_2" } }), {
    conversationId: "conv_2",
    stored: true,
  });
  for (const odd of ["", "x".repeat(257), "resp/../1", 7, null, "a b"]) {
    assert.deepEqual(
      stateRefsOf({ previous_response_id: odd, conversation: { id: odd } }),
      { stored: true },
      String(odd),
    );
  }
});

Deno.test("findPin() finds the key of the previous response before the conversation's, and calls another caller's state foreign", async () => {
  using kv = await Deno.openKv(":memory:");
  await pinState(kv, "openai", "ck_a", "key_1", {
    responseId: "resp_1",
    conversationId: "conv_1",
  });
  await pinState(kv, "openai", "ck_a", "key_2", { responseId: "resp_2" });
  const find = (callerId: string, refs: Parameters<typeof stateRefsOf>[0]) =>
    findPin(kv, "openai", callerId, stateRefsOf(refs));
  assert.deepEqual(
    await find("ck_a", {
      previous_response_id: "resp_2",
      conversation: "conv_1",
    }),
    { kind: "pinned", keyId: "key_2" },
  );
  assert.deepEqual(await find("ck_a", { conversation: "conv_1" }), {
    kind: "pinned",
    keyId: "key_1",
  });
  assert.deepEqual(await find("ck_a", { previous_response_id: "resp_9" }), {
    kind: "none",
  });
  assert.deepEqual(await find("ck_b", { previous_response_id: "resp_1" }), {
    kind: "foreign",
    param: "previous_response_id",
    id: "resp_1",
  });
  assert.deepEqual(await find("ck_b", { conversation: { id: "conv_1" } }), {
    kind: "foreign",
    param: "conversation",
    id: "conv_1",
  });
  // Another provider's pins are its own.
  assert.deepEqual(
    await findPin(
      kv,
      "xai",
      "ck_b",
      stateRefsOf({ previous_response_id: "resp_1" }),
    ),
    { kind: "none" },
  );
});

Deno.test("pinState() leaves a conversation pinned to the caller that named it first, and writes the retention with each pin", async () => {
  using kv = await Deno.openKv(":memory:");
  await pinState(kv, "openai", "ck_a", "key_1", { conversationId: "conv_1" });
  await pinState(kv, "openai", "ck_b", "key_2", { conversationId: "conv_1" });
  const held = await kv.get<
    { keyId: string; callerId: string; expiresAt: number }
  >(
    responsePinKey("openai", "conversation", "conv_1"),
  );
  assert.equal(held.value?.callerId, "ck_a");
  assert.equal(held.value?.keyId, "key_1");
  const days = (held.value!.expiresAt - Date.now()) / 86_400_000;
  assert.ok(days > 29.9 && days <= 30, String(days));
  // Its own caller renews it, with the key that served the latest call.
  await pinState(kv, "openai", "ck_a", "key_3", { conversationId: "conv_1" });
  assert.equal(
    (await kv.get<{ keyId: string }>(
      responsePinKey("openai", "conversation", "conv_1"),
    ))
      .value?.keyId,
    "key_3",
  );
});
