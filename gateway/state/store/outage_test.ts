import assert from "node:assert/strict";
import {
  isStoreUnreachable,
  neverReachedStore,
  PROBE_MAX_MS,
  PROBE_TIMEOUT_MS,
  StoreOutage,
  StoreTimeoutError,
  StoreUnavailableError,
} from "./outage.ts";

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });

Deno.test("StoreOutage lets waiters go once one probe finds the store back, probing alone meanwhile", async () => {
  let up = false;
  let probes = 0;
  const outage = new StoreOutage({
    waitMs: 5_000,
    probe: () => {
      probes++;
      return up ? Promise.resolve() : Promise.reject(refused());
    },
  });
  try {
    assert.ok(outage.report(refused()));
    assert.equal(outage.reachable, false);
    const waiting = Array.from(
      { length: 50 },
      () => outage.back(performance.now() + 5_000),
    );
    await new Promise((resolve) => setTimeout(resolve, 600));
    // 50, 100, 200, 400 ms ceilings, jittered: a handful, not one per waiter.
    assert.ok(probes >= 1 && probes <= 6, `${probes} probes`);
    up = true;
    await Promise.all(waiting);
    assert.equal(outage.reachable, true);
    assert.deepEqual(outage.status(), { reachable: true, waitMs: 5_000 });
  } finally {
    outage.close();
  }
});

Deno.test("StoreOutage gives up at the bound, and at once once the outage is older than it", async () => {
  const outage = new StoreOutage({
    waitMs: 300,
    probe: () => Promise.reject(refused()),
  });
  try {
    outage.report(refused());
    const started = performance.now();
    await assert.rejects(
      () => outage.back(performance.now() + 10_000),
      StoreUnavailableError,
    );
    const waited = performance.now() - started;
    assert.ok(waited >= 250 && waited < 1_000, `waited ${waited} ms`);
    const again = performance.now();
    const error = await outage.back(performance.now() + 10_000).then(
      () => undefined,
      (thrown) => thrown,
    );
    assert.ok(error instanceof StoreUnavailableError);
    assert.equal(error.retryAfterSeconds, 5);
    assert.ok(performance.now() - again < 50, "refused at once");
    assert.equal(outage.status().reachable, false);
    assert.ok(outage.status().downForMs! >= 300);
  } finally {
    outage.close();
  }
});

Deno.test("StoreOutage's own deadline comes first when the operation began late in the outage's bound", async () => {
  const outage = new StoreOutage({
    waitMs: 10_000,
    probe: () => Promise.reject(refused()),
  });
  try {
    outage.report(refused());
    await assert.rejects(
      () => outage.back(performance.now() + 100),
      StoreUnavailableError,
    );
  } finally {
    outage.close();
  }
});

Deno.test("StoreOutage.close() tells waiters the store is closed and stops probing", async () => {
  let probes = 0;
  const outage = new StoreOutage({
    waitMs: 10_000,
    probe: () => {
      probes++;
      return Promise.reject(refused());
    },
  });
  outage.report(refused());
  const waiting = outage.back(performance.now() + 10_000);
  outage.close();
  await assert.rejects(() => waiting, Deno.errors.BadResource);
  const seen = probes;
  await new Promise((resolve) => setTimeout(resolve, PROBE_MAX_MS / 5));
  assert.equal(probes, seen);
});

Deno.test("isStoreUnreachable() and neverReachedStore() tell a lost store from a bug, and a write never sent from one whose answer was lost", () => {
  const reset = Object.assign(new Error("read ECONNRESET"), {
    code: "ECONNRESET",
  });
  assert.ok(isStoreUnreachable(refused()));
  assert.ok(isStoreUnreachable(reset));
  assert.ok(isStoreUnreachable(new StoreUnavailableError(1_000)));
  assert.ok(!isStoreUnreachable(new TypeError("x is undefined")));
  assert.ok(!isStoreUnreachable(Object.assign(new Error(), { code: "23505" })));
  assert.ok(neverReachedStore(refused()));
  assert.ok(!neverReachedStore(reset));
  // An outage that never began says nothing: a report of an unrelated error.
  const outage = new StoreOutage({ waitMs: 1, probe: () => Promise.resolve() });
  assert.equal(outage.report(new TypeError("bug")), false);
  assert.equal(outage.reachable, true);
  outage.close();
});

Deno.test("StoreOutage counts a probe nobody answers as failed and probes again", async () => {
  let probes = 0;
  const outage = new StoreOutage({
    waitMs: 10_000,
    // The first probe hangs for ever; the next is answered.
    probe: () => probes++ === 0 ? new Promise(() => {}) : Promise.resolve(),
  });
  try {
    outage.report(refused());
    const started = performance.now();
    await outage.back(performance.now() + 10_000);
    const took = performance.now() - started;
    assert.ok(took >= PROBE_TIMEOUT_MS && took < PROBE_TIMEOUT_MS + 1_500);
    assert.equal(probes, 2);
  } finally {
    outage.close();
  }
});

Deno.test("StoreOutage.within() fails an operation the store never answers at its deadline, as a timeout whose write may have been applied", async () => {
  const outage = new StoreOutage({
    waitMs: 10_000,
    probe: () => Promise.resolve(),
  });
  try {
    const started = performance.now();
    const error = await outage.within(
      () => new Promise<never>(() => {}),
      performance.now() + 300,
    ).then(() => undefined, (thrown) => thrown);
    const took = performance.now() - started;
    assert.ok(error instanceof StoreTimeoutError, String(error));
    assert.ok(took >= 300 && took < 1_000, `${took} ms`);
    assert.ok(isStoreUnreachable(error));
    assert.ok(!neverReachedStore(error));
    assert.equal(
      await outage.within(() => Promise.resolve(7), performance.now() + 300),
      7,
    );
  } finally {
    outage.close();
  }
});
