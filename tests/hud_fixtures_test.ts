/**
 * HUD v6's documented wire examples (`tests/fixtures/hud_v6/`, see its
 * README for the doc each comes from) round-trip through our framing, are
 * read by our client's parsers, and, replayed against our server, get
 * replies that carry every documented field: the same values, session ids
 * and loopback ports aside.
 *
 * @module
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { MCPServer } from "../mcp/mod.ts";
import {
  capabilityAddress,
  CapabilitySchema,
  encodeFrame,
  findCapability,
  FrameReader,
} from "../mcp/hud/mod.ts";
import { gradeResult } from "../eval/environments/hud_control.ts";

const DIR = new URL("./fixtures/hud_v6/", import.meta.url);
const WIRE_FILES = [
  "session.jsonl",
  "resume.jsonl",
  "tunnel.jsonl",
  "grade_frames.jsonl",
];

async function lines(file: string): Promise<string[]> {
  return (await Deno.readTextFile(new URL(file, DIR))).split("\n").filter(
    Boolean,
  );
}

/** A byte source over fixed bytes, in small chunks (frames split across reads). */
function source(bytes: Uint8Array, chunk = 7) {
  let offset = 0;
  return {
    read(p: Uint8Array): Promise<number | null> {
      if (offset >= bytes.length) return Promise.resolve(null);
      const n = Math.min(chunk, p.length, bytes.length - offset);
      p.set(bytes.subarray(offset, offset + n));
      offset += n;
      return Promise.resolve(n);
    },
  };
}

Deno.test("hud fixtures: every documented frame round-trips through our framing, read whole and in pieces", async () => {
  for (const file of WIRE_FILES) {
    const text = await lines(file);
    const reader = new FrameReader(
      source(new TextEncoder().encode(text.join("\n") + "\n")),
    );
    for (const line of text) {
      const read = await reader.read();
      assert.equal(read.kind, "frame", `${file}: ${line}`);
      const value = (read as { value: unknown }).value;
      assert.deepEqual(value, JSON.parse(line));
      const again = await new FrameReader(source(encodeFrame(value), 4096))
        .read();
      assert.deepEqual((again as { value: unknown }).value, value);
    }
    assert.equal((await reader.read()).kind, "end");
  }
});

Deno.test("hud fixtures: the documented grade frames read as evaluations, score as reward", async () => {
  const [bare, full, failed] = (await lines("grade_frames.jsonl")).map((
    line,
  ) => gradeResult(JSON.parse(line), "add"));
  assert.deepEqual(bare, { reward: 1, done: true });
  assert.deepEqual(full, {
    reward: 0.5,
    done: true,
    content: "Half the checks passed",
    info: { passed: 2, total: 4 },
    subscores: [{ name: "checks", weight: 1, value: 0.5 }],
  });
  assert.deepEqual(failed, {
    reward: 0,
    done: true,
    isError: true,
    content: "grader crashed",
  });
  assert.throws(() => gradeResult({ reward: 1 }, "add"), /no numeric score/);
});

Deno.test("hud fixtures: the documented capability manifests parse, resolve by name or protocol, and give their daemon's address", async () => {
  const raw = JSON.parse(
    await Deno.readTextFile(new URL("bindings.json", DIR)),
  );
  const bindings = raw.map((b: unknown) => CapabilitySchema.parse(b));
  assert.deepEqual(bindings, raw);
  assert.equal(findCapability(bindings, "rfb")?.name, "screen");
  assert.equal(findCapability(bindings, "cdp")?.name, "browser");
  assert.equal(findCapability(bindings, "tools")?.protocol, "mcp/2025-11-25");
  assert.equal(findCapability(bindings, "robot"), undefined);
  assert.deepEqual(capabilityAddress(bindings[2]), {
    hostname: "127.0.0.1",
    port: 5900,
  });
  assert.deepEqual(capabilityAddress(bindings[0]), {
    hostname: "127.0.0.1",
    port: 8040,
  });
});

/** The docs' `calc` environment, with its `add` task. */
function calc(): MCPServer {
  const mcp = new MCPServer({ name: "calc", version: "1.0.0" });
  mcp.scenario({
    name: "add",
    description: "Add two integers.",
    input: { a: z.number().int(), b: z.number().int() },
  }, async function* ({ a, b }) {
    const answer = yield `What is ${a} + ${b}?`;
    yield Number(answer) === a + b ? 1 : 0;
  });
  return mcp;
}

/** Whether `actual` carries every field of `expected`, with the same values. */
function assertCarries(actual: unknown, expected: unknown, path = "$"): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path} is not an array`);
    assert.equal(actual.length, expected.length, `${path} length`);
    expected.forEach((item, i) =>
      assertCarries(actual[i], item, `${path}[${i}]`)
    );
  } else if (typeof expected === "object" && expected !== null) {
    assert.ok(
      typeof actual === "object" && actual !== null,
      `${path} is not an object`,
    );
    for (const [key, value] of Object.entries(expected)) {
      assertCarries(
        (actual as Record<string, unknown>)[key],
        value,
        `${path}.${key}`,
      );
    }
  } else if (typeof expected === "string") {
    // HUD's messages are lower case where ours are sentence case.
    assert.equal(String(actual).toLowerCase(), expected.toLowerCase(), path);
  } else assert.equal(actual, expected, path);
}

/** Replays request lines on a connection, checking each reply against the fixture's. */
async function replay(
  conn: Deno.Conn,
  reader: FrameReader,
  fixture: string[],
  normalize: (text: string) => string,
): Promise<Record<string, unknown>[]> {
  const replies = [];
  for (let i = 0; i < fixture.length; i += 2) {
    await conn.write(new TextEncoder().encode(normalize(fixture[i]) + "\n"));
    const read = await reader.read();
    assert.equal(read.kind, "frame");
    const reply = (read as { value: Record<string, unknown> }).value;
    const withoutPorts = JSON.parse(
      JSON.stringify(reply).replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT"),
    );
    assertCarries(
      withoutPorts,
      JSON.parse(
        normalize(fixture[i + 1]).replace(
          /127\.0\.0\.1:\d+/g,
          "127.0.0.1:PORT",
        ),
      ),
    );
    replies.push(reply);
  }
  return replies;
}

Deno.test("hud fixtures: replayed against our server, every documented request gets the documented reply", async () => {
  const mcp = calc();
  const abort = new AbortController();
  const listening = Promise.withResolvers<number>();
  const log = console.log;
  console.log = () => {};
  const stopped = mcp.run({
    transport: "hud",
    port: 0,
    handleSignals: false,
    signal: abort.signal,
    onListen: (addr) => listening.resolve(addr.port),
  });
  const port = await listening.promise;
  console.log = log;
  const open = async () => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    return { conn, reader: new FrameReader(conn) };
  };
  try {
    const session = await lines("session.jsonl");
    const first = await open();
    let sessionId = "";
    const normalize = (text: string) =>
      sessionId ? text.replaceAll("sess-3f9a2c1b", sessionId) : text;
    // hello first, to learn the session id the rest is normalised to.
    await first.conn.write(new TextEncoder().encode(session[0] + "\n"));
    const hello = await first.reader.read();
    sessionId = (hello as { value: { result: { session_id: string } } })
      .value.result.session_id;
    await replay(first.conn, first.reader, session.slice(2), normalize);
    first.conn.close();

    const tunnel = await open();
    await replay(
      tunnel.conn,
      tunnel.reader,
      await lines("tunnel.jsonl"),
      (t) => t,
    );
    tunnel.conn.close();

    // Park a started task, then resume it as resume.jsonl does.
    const starter = await open();
    await starter.conn.write(new TextEncoder().encode(session[0] + "\n"));
    const parked = await starter.reader.read();
    sessionId = (parked as { value: { result: { session_id: string } } })
      .value.result.session_id;
    await replay(starter.conn, starter.reader, session.slice(4, 6), normalize);
    starter.conn.close();
    const resumer = await open();
    const resume = await lines("resume.jsonl");
    for (let attempt = 0;; attempt++) {
      await resumer.conn.write(
        new TextEncoder().encode(normalize(resume[0]) + "\n"),
      );
      const read = await resumer.reader.read();
      const value = (read as { value: Record<string, unknown> }).value;
      if (!value.error) {
        assertCarries(
          JSON.parse(
            JSON.stringify(value).replace(
              /127\.0\.0\.1:\d+/g,
              "127.0.0.1:PORT",
            ),
          ),
          JSON.parse(
            normalize(resume[1]).replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT"),
          ),
        );
        break;
      }
      // The drop reaches the server a moment after close().
      assert.ok(attempt < 100, JSON.stringify(value));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await replay(resumer.conn, resumer.reader, resume.slice(2), normalize);
    resumer.conn.close();
  } finally {
    abort.abort();
    await stopped;
  }
});
