// Many Streamable HTTP sessions against a real subprocess: concurrency,
// per-session state, and proof that deleted and expired sessions free their
// memory (session count back to 0, heap after GC back near its baseline).
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "./_mcp_client.ts";
import { startHttpFixture } from "./fixtures/reliability_process.ts";

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

interface Stats {
  heapUsed: number;
  sessions: number;
  remembered: number;
}

async function connect(base: string, name: string): Promise<Session> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

function text(result: unknown): string {
  return (result as { content: { text: string }[] }).content[0].text;
}

/** The fixture's test hook, through the dev endpoint (not a transport session). */
async function stats(base: string, tool = "stats"): Promise<Stats> {
  const response = await fetch(`${base}/dev/tools/${tool}`, {
    method: "POST",
    body: "{}",
  });
  return (await response.json()).structuredContent;
}

async function sessionsEventually(
  base: string,
  expected: number,
): Promise<number> {
  const deadline = Date.now() + 8_000;
  let count = (await stats(base)).sessions;
  while (count !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    count = (await stats(base)).sessions;
  }
  return count;
}

/** Opens `n` sessions at once, each storing and reading back its own value. */
async function openSessions(
  base: string,
  n: number,
  tag: string,
): Promise<Session[]> {
  return await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const session = await connect(base, `${tag}-${i}`);
      await session.client.callTool({
        name: "remember",
        arguments: { value: `${tag}-${i}-`.padEnd(4096, "v") },
      });
      return session;
    }),
  );
}

async function deleteAndClose(sessions: Session[]): Promise<void> {
  await Promise.all(sessions.map(async ({ client, transport }) => {
    await transport.terminateSession();
    await client.close();
  }));
}

Deno.test("50 concurrent HTTP sessions with interleaved calls all get correct results and their own state", async () => {
  const { process, base } = await startHttpFixture();
  let sessions: Session[] = [];
  try {
    sessions = await Promise.all(
      Array.from({ length: 50 }, (_, i) => connect(base, `client-${i}`)),
    );
    assert.equal(new Set(sessions.map((s) => s.transport.sessionId)).size, 50);
    assert.equal((await stats(base)).sessions, 50);
    // Interleave: every session writes, echoes and reads at the same time.
    const results = await Promise.all(sessions.map(async ({ client }, i) => {
      const [, echoed] = await Promise.all([
        client.callTool({
          name: "remember",
          arguments: { value: `value-${i}` },
        }),
        client.callTool({ name: "echo", arguments: { text: `echo-${i}` } }),
      ]);
      const [recalled, again] = await Promise.all([
        client.callTool({ name: "recall", arguments: {} }),
        client.callTool({ name: "echo", arguments: { text: `again-${i}` } }),
      ]);
      return [text(echoed), text(recalled), text(again)];
    }));
    results.forEach((result, i) =>
      assert.deepEqual(result, [`echo-${i}`, `value-${i}`, `again-${i}`])
    );
    await deleteAndClose(sessions);
    sessions = [];
    assert.equal(await sessionsEventually(base, 0), 0);
  } finally {
    await Promise.all(sessions.map(({ client }) => client.close()));
    await process.dispose();
  }
});

Deno.test("deleted and expired sessions free their memory: session count back to 0 and heap near its baseline", async () => {
  const { process, base } = await startHttpFixture({
    // One client holds 100 sessions here, past the default cap per peer.
    env: { REL_IDLE_MS: "2000", MCP_MAX_SESSIONS_PER_PEER: "100" },
    denoFlags: ["--v8-flags=--expose-gc"],
  });
  const open: Session[] = [];
  try {
    // Warm up code paths and caches, then take the baseline.
    await deleteAndClose(await openSessions(base, 20, "warmup"));
    assert.equal(await sessionsEventually(base, 0), 0);
    await stats(base, "forget");
    const baseline = (await stats(base)).heapUsed;

    // What 100 open sessions cost, to size what a leak would look like.
    open.push(...await openSessions(base, 50, "a"));
    open.push(...await openSessions(base, 50, "b"));
    await stats(base, "forget");
    const withOpen = await stats(base);
    assert.equal(withOpen.sessions, 100);
    const perSession = (withOpen.heapUsed - baseline) / 100;

    // Half are deleted by their clients (DELETE /mcp)...
    await deleteAndClose(open.splice(0, 50));
    // ...the other half are closed client-side without DELETE and expire.
    await Promise.all(open.splice(0).map(({ client }) => client.close()));
    assert.equal(await sessionsEventually(base, 0), 0);

    // Another full round, so a per-session leak would add up.
    await deleteAndClose(await openSessions(base, 50, "c"));
    const expiring = await openSessions(base, 50, "d");
    await Promise.all(expiring.map(({ client }) => client.close()));
    assert.equal(await sessionsEventually(base, 0), 0);
    await stats(base, "forget");
    const after = await stats(base);
    const growth = after.heapUsed - baseline;
    console.error(
      `heap: baseline ${baseline}, 100 open ${withOpen.heapUsed} (${
        Math.round(perSession)
      } B/session), after 200 closed ${after.heapUsed} (growth ${growth} B)`,
    );
    assert.ok(perSession > 0, "open sessions should cost memory");
    // 200 sessions were opened and closed; keeping even a fifth of one
    // session's memory each would exceed this bound.
    assert.ok(
      growth < Math.max(40 * perSession, 512 * 1024),
      `heap grew ${growth} B after closing 200 sessions (${
        Math.round(perSession)
      } B per open session)`,
    );
  } finally {
    await Promise.all(open.map(({ client }) => client.close()));
    await process.dispose();
  }
});
