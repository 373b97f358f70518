import assert from "node:assert/strict";
import {
  encodeFrame,
  FrameReader,
  MAX_FRAME_BYTES,
  oversizedMessage,
} from "./framing.ts";
import { parseControlAddress } from "./tunnel.ts";

function source(text: string | Uint8Array, chunk = 3) {
  const bytes = typeof text === "string"
    ? new TextEncoder().encode(text)
    : text;
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

Deno.test("FrameReader reads frames split across reads, skips blank lines, accepts CRLF and a last line without newline", async () => {
  const reader = new FrameReader(source('{"a":1}\r\n\n{"b":[2]}\n{"c":3}'));
  assert.deepEqual(await reader.read(), { kind: "frame", value: { a: 1 } });
  assert.deepEqual(await reader.read(), { kind: "frame", value: { b: [2] } });
  assert.deepEqual(await reader.read(), { kind: "frame", value: { c: 3 } });
  assert.deepEqual(await reader.read(), { kind: "end" });
});

Deno.test("FrameReader calls a line that is not UTF-8 JSON invalid and reads on", async () => {
  const bytes = new Uint8Array([
    0x22,
    0xff,
    0x22,
    0x0a,
    ...new TextEncoder().encode("{x\n1\n"),
  ]);
  const reader = new FrameReader(source(bytes));
  assert.equal((await reader.read()).kind, "invalid");
  assert.equal((await reader.read()).kind, "invalid");
  assert.deepEqual(await reader.read(), { kind: "frame", value: 1 });
});

Deno.test("FrameReader measures an oversized line and reads on after it", async () => {
  const reader = new FrameReader(source("x".repeat(20) + "\n[1]\n", 8), 10);
  assert.deepEqual(await reader.read(), {
    kind: "oversized",
    size: 20,
    measured: true,
  });
  assert.deepEqual(await reader.read(), { kind: "frame", value: [1] });
  assert.deepEqual(await reader.read(), { kind: "end" });
});

Deno.test("FrameReader.rest() gives what arrived with the first frame", async () => {
  const reader = new FrameReader(source('{"m":1}\nRFB 003.008\n', 64));
  assert.equal((await reader.read()).kind, "frame");
  assert.equal(new TextDecoder().decode(reader.rest()), "RFB 003.008\n");
  assert.equal(reader.rest().length, 0, "handed over once");
});

Deno.test("encodeFrame writes compact JSON and a newline, and refuses a frame over 16 MiB naming its size", () => {
  assert.equal(
    new TextDecoder().decode(encodeFrame({ a: [1, "b"] })),
    '{"a":[1,"b"]}\n',
  );
  assert.throws(
    () => encodeFrame("x".repeat(MAX_FRAME_BYTES)),
    new RangeError(oversizedMessage(MAX_FRAME_BYTES + 2, true)),
  );
});

Deno.test("parseControlAddress reads tcp://host:port and host:port, and refuses anything else in one line", () => {
  assert.deepEqual(parseControlAddress("tcp://127.0.0.1:8765"), {
    hostname: "127.0.0.1",
    port: 8765,
  });
  assert.deepEqual(parseControlAddress("localhost:9"), {
    hostname: "localhost",
    port: 9,
  });
  assert.deepEqual(parseControlAddress("tcp://[::1]:80"), {
    hostname: "::1",
    port: 80,
  });
  for (
    const bad of [
      "tcp://host",
      "http://h:1",
      "tcp://h:0",
      "tcp://h:70000",
      "tcp://h:1/path",
    ]
  ) {
    assert.throws(
      () => parseControlAddress(bad),
      /Invalid control address/,
      bad,
    );
  }
});

Deno.test("FrameReader keeps only the bytes of a line that trickles in one byte a read, not a 64 KiB buffer per byte", async () => {
  const reads = 6000;
  let count = 0;
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => reached = resolve);
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const trickle = {
    async read(p: Uint8Array): Promise<number | null> {
      if (count === reads) {
        reached();
        await released;
        p[0] = 0x0a;
        count++;
        return 1;
      }
      if (count > reads) return null;
      p[0] = 0x31; // "1"
      count++;
      return 1;
    },
  };
  const before = Deno.memoryUsage().external;
  const reader = new FrameReader(trickle);
  const frame = reader.read();
  await waiting;
  const held = Deno.memoryUsage().external - before;
  release();
  const read = await frame;
  assert.equal(read.kind, "frame");
  // 6000 bytes of line; a 64 KiB buffer kept per byte would be 375 MiB.
  assert.ok(
    held < 64 * 1024 * 1024,
    `${Math.round(held / 1024 / 1024)} MiB held for a 6000-byte line`,
  );
});

Deno.test("FrameReader refuses a frame with too many values or too deep a nesting before parsing it, and reads on", async () => {
  const many = `[${Array.from({ length: 11 }, () => "{}").join(",")}]`;
  const deep = "[".repeat(65) + "]".repeat(65);
  const strings = JSON.stringify({ x: "a,b,c,{,[".repeat(20) });
  const reader = new FrameReader(
    source(`${many}\n${deep}\n${strings}\n[1]\n`, 4096),
    { maxValues: 10 },
  );
  const first = await reader.read();
  assert.equal(first.kind, "invalid");
  assert.match(
    (first as { reason: string }).reason,
    /more than 10 JSON values: refused before parsing/,
  );
  const second = await reader.read();
  assert.match((second as { reason: string }).reason, /deeper than 64 levels/);
  assert.equal(
    (await reader.read()).kind,
    "frame",
    "commas and brackets inside strings are not counted",
  );
  assert.deepEqual(await reader.read(), { kind: "frame", value: [1] });
});
