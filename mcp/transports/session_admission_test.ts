import assert from "node:assert/strict";
import {
  type Refusal,
  refusalResponse,
  type Seat,
  SessionAdmission,
  type SessionLimits,
} from "./session_admission.ts";

const WORDING = { noun: "sessions", closeHint: "close one with DELETE /mcp" };

/** An admission whose sessions record being closed. */
function setup(limits: SessionLimits) {
  const admission = new SessionAdmission(limits, WORDING);
  const closed: string[] = [];
  const admit = (
    name: string,
    peer: string | undefined,
    harness = false,
    now?: number,
  ) => {
    let seat: Seat | undefined;
    return admission.admit(peer, harness, () => {
      closed.push(name);
      seat?.release();
      return Promise.resolve();
    }, now).then((result) => {
      if (!("status" in result)) seat = result;
      return result;
    });
  };
  return { admission, closed, admit };
}

function refused(result: Seat | Refusal): Refusal {
  assert.ok("status" in result, "expected a refusal");
  return result;
}

function admitted(result: Seat | Refusal): Seat {
  assert.ok(
    !("status" in result),
    `expected a seat, got: ${JSON.stringify(result)}`,
  );
  return result;
}

Deno.test("SessionAdmission refuses a peer past its cap with 429 and a retry time, and serves other peers", async () => {
  const { admission, admit } = setup({
    maxSessions: 10,
    maxSessionsPerPeer: 2,
    evictableIdleMs: 60_000,
  });
  const t = Date.now();
  admitted(await admit("a1", "127.0.0.1", false, t));
  admitted(await admit("a2", "127.0.0.1", false, t));
  const refusal = refused(await admit("a3", "127.0.0.1", false, t + 15_000));
  assert.equal(refusal.status, 429);
  assert.equal(refusal.retryAfterSeconds, 45);
  assert.match(
    refusal.message,
    /^Too many sessions from 127\.0\.0\.1: 2 are open and active \(the cap per peer, MCP_MAX_SESSIONS_PER_PEER\); retry in 45 s or close one with DELETE \/mcp$/,
  );
  admitted(await admit("b1", "127.0.0.2", false, t));
  assert.equal(admission.size, 3);
  const response = refusalResponse(refusal);
  assert.equal(response.status, 429);
  assert.equal(response.headers.get("retry-after"), "45");
  assert.equal((await response.json()).error.code, -32000);
});

Deno.test("SessionAdmission closes a peer's own session idle a minute to make room, never another peer's", async () => {
  const { admit, closed } = setup({
    maxSessions: 10,
    maxSessionsPerPeer: 2,
    evictableIdleMs: 1_000,
  });
  const t = Date.now();
  admitted(await admit("other", "127.0.0.2", false, t - 5_000));
  admitted(await admit("a1", "127.0.0.1", false, t - 2_000));
  admitted(await admit("a2", "127.0.0.1", false, t));
  admitted(await admit("a3", "127.0.0.1", false, t));
  assert.deepEqual(closed, ["a1"]);
});

Deno.test("SessionAdmission gives the harness a bounded reserve past the total cap, beyond any peer's cap", async () => {
  const { admission, admit } = setup({
    maxSessions: 3,
    maxSessionsPerPeer: 3,
    harnessReserve: 2,
  });
  for (let i = 0; i < 3; i++) admitted(await admit(`a${i}`, "127.0.0.1"));
  assert.equal(refused(await admit("b", "127.0.0.2")).status, 503);
  const first = admitted(await admit("h1", "127.0.0.1", true));
  assert.equal(first.harness, true);
  admitted(await admit("h2", "127.0.0.1", true));
  const full = refused(await admit("h3", "127.0.0.1", true));
  assert.equal(full.status, 503);
  assert.match(full.message, /the harness's reserve of 2 past 3 is in use too/);
  assert.equal(admission.size, 5);
  first.release();
  first.release(); // once only
  assert.equal(admission.size, 4);
  admitted(await admit("h3", "127.0.0.1", true));
});

Deno.test("SessionAdmission: a guest never evicts the harness's idle session; the harness may evict an idle guest", async () => {
  const { admit, closed } = setup({
    maxSessions: 2,
    harnessReserve: 0,
    evictableIdleMs: 1_000,
  });
  const t = Date.now();
  admitted(await admit("h", "127.0.0.1", true, t - 10_000));
  admitted(await admit("g", "127.0.0.2", false, t - 5_000));
  // Only the guest is evictable for a guest.
  admitted(await admit("g2", "127.0.0.3", false, t));
  assert.deepEqual(closed, ["g"]);
  assert.equal(refused(await admit("g3", "127.0.0.4", false, t)).status, 503);
  admitted(await admit("h2", "127.0.0.1", true, t + 10_000));
  assert.deepEqual(closed, ["g", "h"]);
});

Deno.test("SessionAdmission counts concurrent admissions before they settle: a burst never passes the caps", async () => {
  const { admission, admit } = setup({
    maxSessions: 100,
    maxSessionsPerPeer: 8,
  });
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => admit(`a${i}`, "127.0.0.1")),
  );
  assert.equal(results.filter((r) => !("status" in r)).length, 8);
  assert.equal(admission.size, 8);
});

Deno.test("SessionAdmission counts an in-process caller (no peer address) toward the total cap only", async () => {
  const { admit } = setup({ maxSessions: 3, maxSessionsPerPeer: 1 });
  for (let i = 0; i < 3; i++) admitted(await admit(`local${i}`, undefined));
  assert.equal(refused(await admit("local4", undefined)).status, 503);
});

Deno.test("SessionAdmission.expire() closes the sessions idle past the limit", async () => {
  const { admission, admit, closed } = setup({});
  const t = Date.now();
  admitted(await admit("old", "127.0.0.1", false, t - 10_000));
  const fresh = admitted(await admit("fresh", "127.0.0.1", false, t - 10_000));
  fresh.touch();
  assert.equal(await admission.expire(5_000), 1);
  assert.deepEqual(closed, ["old"]);
  assert.equal(admission.size, 1);
});
