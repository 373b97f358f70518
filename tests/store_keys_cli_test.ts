/**
 * `deno task keys` with `GATEWAY_STORE` set works on the PostgreSQL store the
 * gateways share, names it on stderr without its password, and an
 * unreachable database is one line.
 */
import assert from "node:assert/strict";
import { POSTGRES_MISSING, reportSkip, startPostgres } from "./_postgres.ts";

const CLI = new URL("../gateway/cli/keys.ts", import.meta.url).pathname;

async function keys(store: string, ...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    env: { GATEWAY_STORE: store, GATEWAY_KV_PATH: ":memory:" },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    code: output.code,
    stdout: text(output.stdout),
    stderr: text(output.stderr),
  };
}

if (POSTGRES_MISSING) reportSkip();

Deno.test({
  name:
    "the keys CLI creates and lists callers in the PostgreSQL store GATEWAY_STORE names",
  ignore: POSTGRES_MISSING !== undefined,
  async fn() {
    await using pg = await startPostgres();
    const url = (await pg.createDatabase("keys_cli")).replace(
      "postgres@",
      "postgres:hunter2secret@",
    );
    const created = await keys(
      url,
      "create",
      "--name",
      "ops",
      "--credits",
      "3",
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stderr,
      /^Store: PostgreSQL 127\.0\.0\.1:\d+\/keys_cli \(GATEWAY_STORE\)/,
    );
    assert.ok(!created.stderr.includes("hunter2secret"));
    const { id } = JSON.parse(created.stdout);
    const listed = await keys(url, "list");
    assert.equal(listed.code, 0, listed.stderr);
    const callers = JSON.parse(listed.stdout) as { id: string; name: string }[];
    assert.deepEqual(callers.map((c) => [c.id, c.name]), [[id, "ops"]]);
  },
});

Deno.test("the keys CLI against an unreachable GATEWAY_STORE is one line without the password", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const result = await keys(
    `postgres://postgres:hunter2secret@127.0.0.1:${port}/gateway`,
    "list",
  );
  assert.equal(result.code, 1);
  assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  assert.match(result.stderr, /^Cannot open the store \(GATEWAY_STORE\)/);
  assert.ok(!result.stderr.includes("hunter2secret"));
});
