import assert from "node:assert/strict";
import { uuidV7 } from "./_ids.ts";

Deno.test("uuidV7() is a version 7 UUID whose first 48 bits are the time", () => {
  const time = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
  const id = uuidV7(time);
  assert.match(
    id,
    /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  assert.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), time);
});

Deno.test("uuidV7() sorts by time and differs within a millisecond", () => {
  const earlier = uuidV7(1_000);
  const later = uuidV7(1_001);
  assert.ok(earlier < later);
  assert.notEqual(uuidV7(1_000), uuidV7(1_000));
});
