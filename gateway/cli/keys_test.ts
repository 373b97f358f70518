import assert from "node:assert/strict";
import { join } from "node:path";
import { createCallerAuthenticator } from "../state/callers.ts";
import { listLedger } from "../state/credits/ledger.ts";

const CLI = new URL("./keys.ts", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function keys(kvPath: string, ...args: string[]): Promise<Run> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    env: { GATEWAY_KV_PATH: kvPath },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("keys CLI creates, lists, shows, tops up and revokes keys in a KV file", async () => {
  const dir = await Deno.makeTempDir();
  // A folder that does not exist yet: the CLI creates it.
  const kvPath = join(dir, "data", "gateway.kv");
  try {
    const created = await keys(
      kvPath,
      "create",
      "--name",
      "alice",
      "--credits",
      "10",
    );
    assert.equal(created.code, 0, created.stderr);
    const caller = JSON.parse(created.stdout);
    assert.equal(caller.name, "alice");
    assert.equal(caller.balance, 10);
    assert.match(caller.key, /^mk-/);
    assert.match(created.stderr, /not shown again/);

    const listed = JSON.parse((await keys(kvPath, "list")).stdout);
    assert.deepEqual(listed.map((entry: { id: string }) => entry.id), [
      caller.id,
    ]);
    assert.equal(JSON.stringify(listed).includes(caller.key), false);

    const topped = await keys(kvPath, "topup", caller.id, "--amount", "5");
    assert.deepEqual(JSON.parse(topped.stdout), { id: caller.id, balance: 15 });
    assert.equal(
      JSON.parse((await keys(kvPath, "show", caller.id)).stdout).balance,
      15,
    );

    const kv = await Deno.openKv(kvPath);
    try {
      assert.deepEqual(
        await createCallerAuthenticator(kv).authenticate(caller.key),
        { id: caller.id, name: "alice" },
      );
      assert.deepEqual(
        (await listLedger(kv, caller.id)).map((entry) => entry.amountMicros),
        [5_000_000, 10_000_000],
      );
    } finally {
      kv.close();
    }

    assert.deepEqual(
      JSON.parse((await keys(kvPath, "revoke", caller.id)).stdout),
      { id: caller.id, deleted: true },
    );
    const gone = await keys(kvPath, "show", caller.id);
    assert.equal(gone.code, 1);
    assert.deepEqual(gone.stderr.trim().split("\n"), [
      `Store: KV ${kvPath} (GATEWAY_KV_PATH)`,
      `Caller key "${caller.id}" not found; run "deno task keys help" for usage`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keys CLI exits 1 with one line on bad input", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  try {
    const cases: [string[], RegExp][] = [
      [["create"], /^Missing --name;/],
      [
        ["create", "--name", "x", "--credits", "ten"],
        /^Invalid --credits "ten"/,
      ],
      [
        ["topup", "ck_nope", "--amount", "1"],
        /^Caller key "ck_nope" not found/,
      ],
      [["topup", "ck_nope"], /^Missing --amount/],
      [["frobnicate"], /^Unknown command "frobnicate"/],
      [["list", "--bogus"], /bogus/],
    ];
    for (const [args, expected] of cases) {
      const result = await keys(kvPath, ...args);
      assert.equal(result.code, 1, args.join(" "));
      // The store opened, then the one line about the mistake.
      const [store, ...rest] = result.stderr.trim().split("\n");
      assert.match(store, /^Store: KV /);
      assert.equal(rest.length, 1, result.stderr);
      assert.match(rest[0], expected);
    }
    const help = await keys(kvPath, "help");
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: deno task keys/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keys limits sets and removes a key's limits, and a bad limit is one line", async () => {
  const dir = await Deno.makeTempDir();
  const env = { GATEWAY_KV_PATH: `${dir}/gateway.kv`, NO_COLOR: "1" };
  const run = async (...args: string[]) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CLI, ...args],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: output.code,
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr).trim(),
    };
  };
  try {
    const created = await run(
      "create",
      "--name",
      "limited",
      "--limits",
      '{"rpm":60,"models":["gpt-4o-mini"]}',
    );
    assert.equal(created.code, 0, created.stderr);
    const { id, limits } = JSON.parse(created.stdout);
    assert.deepEqual(limits, { rpm: 60, models: ["gpt-4o-mini"] });
    const set = await run(
      "limits",
      id,
      '{"spend":{"amount":5,"period":"month"}}',
    );
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout).limits, {
      spend: { amount: 5, period: "month" },
    });
    const cleared = await run("limits", id, "none");
    assert.equal(JSON.parse(cleared.stdout).limits, null);
    const bad = await run(
      "limits",
      id,
      '{"spend":{"amount":5,"period":"year"}}',
    );
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.split("\n").length, 2, bad.stderr);
    assert.match(bad.stderr.split("\n")[1], /Invalid limits: "spend\.period"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keys CLI names the store it opened, and says when it created an empty one", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "fresh", "gateway.kv");
  try {
    const first = await keys(kvPath, "list");
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.trim(), "[]");
    assert.equal(
      first.stderr.trim(),
      `Store: KV ${kvPath} (GATEWAY_KV_PATH) did not exist and was created just now, empty; set GATEWAY_KV_PATH to the gateway's own KV`,
    );
    const again = await keys(kvPath, "list");
    assert.equal(again.stderr.trim(), `Store: KV ${kvPath} (GATEWAY_KV_PATH)`);
    const memory = await keys(":memory:", "list");
    assert.match(
      memory.stderr,
      /^Store: KV in memory .*gone when this command ends/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
