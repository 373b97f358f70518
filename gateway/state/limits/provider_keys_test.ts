import assert from "node:assert/strict";
import { SharedKeyWindows } from "./provider_keys.ts";

const MINUTE_START = Date.UTC(2026, 10, 24, 10, 0, 0);

Deno.test("one call too large for a key's minute does not stop the smaller calls the shared counter still has room for", async () => {
  using kv = await Deno.openKv(":memory:");
  let now = MINUTE_START + 1_000;
  const windows = new SharedKeyWindows(kv, { now: () => now, log: () => {} });
  // A slice is 100 tokens of 3,200.
  windows.add("k", { rpm: Infinity, tpm: 3_200 });
  await windows.settled();
  // A caller asks for the key's whole minute: 3,100 are left, so it waits.
  assert.ok(windows.waitMs("k", 3_200) > 0);
  await windows.settled();
  assert.ok(windows.waitMs("k", 3_200) > 50_000, "refused for the minute");
  // Small calls use up the slice this process holds...
  assert.equal(windows.waitMs("k", 50), 0);
  windows.take("k", 50);
  windows.take("k", 50);
  await windows.settled();
  // ...and then claim more of the 3,000 tokens still free in the minute.
  now += 1_000;
  windows.waitMs("k", 50);
  await windows.settled();
  assert.equal(windows.waitMs("k", 50), 0);
  const window = await kv.get<{ tokens: number }>([
    "provider_key_window",
    "k",
    MINUTE_START,
  ]);
  assert.ok(window.value!.tokens <= 3_200);
});

Deno.test("a key with no request left in its minute refuses every call until the next minute", async () => {
  using kv = await Deno.openKv(":memory:");
  let now = MINUTE_START + 1_000;
  const windows = new SharedKeyWindows(kv, { now: () => now, log: () => {} });
  windows.add("k", { rpm: 2, tpm: Infinity });
  await windows.settled();
  windows.take("k", 10);
  await windows.settled();
  windows.take("k", 10);
  await windows.settled();
  windows.waitMs("k", 10);
  await windows.settled();
  assert.equal(windows.waitMs("k", 10), 59_000);
  assert.equal(windows.waitMs("k", 0), 59_000);
  now = MINUTE_START + 60_000;
  windows.waitMs("k", 10);
  await windows.settled();
  assert.equal(windows.waitMs("k", 10), 0);
});
