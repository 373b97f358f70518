import assert from "node:assert/strict";
import { ResponseStore } from "./response_store.ts";

Deno.test("ResponseStore replays a chain oldest turn first", () => {
  const store = new ResponseStore();
  store.put("sk-a", "resp_1", undefined, [{ n: 1 }, { n: 2 }]);
  store.put("sk-a", "resp_2", "resp_1", [{ n: 3 }]);
  store.put("sk-a", "resp_3", "resp_2", [{ n: 4 }]);
  assert.deepEqual(store.history("sk-a", "resp_3"), [
    { n: 1 },
    { n: 2 },
    { n: 3 },
    { n: 4 },
  ]);
  assert.deepEqual(store.history("sk-a", "resp_1"), [{ n: 1 }, { n: 2 }]);
});

Deno.test("ResponseStore keeps each organization's responses from the others", () => {
  const store = new ResponseStore();
  store.put("sk-a", "resp_1", undefined, [{ n: 1 }]);
  assert.equal(store.has("sk-a", "resp_1"), true);
  assert.equal(store.has("sk-b", "resp_1"), false);
  assert.equal(store.history("sk-b", "resp_1"), undefined);
  assert.equal(store.history("sk-a", "resp_unknown"), undefined);
});

Deno.test("ResponseStore forgets the oldest responses past its count", () => {
  const store = new ResponseStore({ maxResponses: 3 });
  for (let n = 1; n <= 5; n++) {
    store.put("sk", `resp_${n}`, n > 1 ? `resp_${n - 1}` : undefined, [{ n }]);
  }
  assert.equal(store.size, 3);
  assert.equal(store.has("sk", "resp_2"), false);
  // The chain ends where its older turns were forgotten.
  assert.deepEqual(store.history("sk", "resp_5"), [{ n: 3 }, { n: 4 }, {
    n: 5,
  }]);
});

Deno.test("ResponseStore forgets the oldest responses past its size and never keeps an oversized turn", () => {
  const store = new ResponseStore({ maxChars: 100 });
  const turn = [{ text: "x".repeat(30) }]; // 43 characters as JSON
  store.put("sk", "resp_1", undefined, turn);
  store.put("sk", "resp_2", undefined, turn);
  store.put("sk", "resp_3", undefined, turn);
  assert.equal(store.has("sk", "resp_1"), false);
  assert.equal(store.has("sk", "resp_3"), true);
  store.put("sk", "resp_big", undefined, [{ text: "y".repeat(200) }]);
  assert.equal(store.has("sk", "resp_big"), false);
  assert.equal(store.has("sk", "resp_3"), true);
});
