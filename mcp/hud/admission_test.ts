import assert from "node:assert/strict";
import { Admission } from "./admission.ts";

Deno.test("Admission caps guests in total and per peer, turns the rest into knocks, closes the oldest knock past their cap, and stops counting a connection that shows the token", () => {
  const admission = new Admission({
    maxConnections: 3,
    maxPerPeer: 2,
    maxKnocks: 2,
  });
  const closed: string[] = [];
  const admit = (peer: string, name: string) =>
    admission.admit(peer, () => closed.push(name));
  const a1 = admit("10.0.0.1", "a1");
  admit("10.0.0.1", "a2");
  assert.equal(admit("10.0.0.1", "a3").kind, "knock", "per-peer cap");
  const b1 = admit("10.0.0.2", "b1");
  assert.equal(b1.kind, "guest");
  assert.equal(admit("10.0.0.3", "c1").kind, "knock", "total cap");
  assert.equal(admit("10.0.0.3", "c2").kind, "knock");
  assert.deepEqual(closed, ["a3"], "the oldest knock made room");
  assert.equal(admission.knocks, 2);
  a1.trust();
  assert.equal(a1.kind, "harness");
  assert.equal(admission.guests, 2, "a harness connection does not count");
  a1.release();
  assert.equal(admission.guests, 2, "and its release gives back nothing twice");
  assert.equal(admit("10.0.0.1", "a4").kind, "guest", "room again");
});
