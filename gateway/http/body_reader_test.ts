import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { readBody } from "./body_reader.ts";

const encoder = new TextEncoder();

/** A streamed request of `pieces`, recording how many were pulled and whether it was cancelled. */
function streamed(pieces: readonly string[], headers: HeadersInit = {}) {
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled === pieces.length) return controller.close();
      controller.enqueue(encoder.encode(pieces[seen.pulled++]));
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  const request = new Request("http://localhost/", {
    method: "POST",
    body,
    headers,
  });
  return { request, seen };
}

Deno.test("readBody() joins a body's pieces, decodes it as UTF-8 and counts its structure", async () => {
  const { request } = streamed(['{"text":"é', "中", '","list":[1,2]}']);
  const read = await readBody(request, { maxBytes: 1024 });
  assert.equal(read.text, '{"text":"é中","list":[1,2]}');
  assert.equal(read.floorTokens, 3); // { : , : [ , ] }: 8
  const empty = await readBody(new Request("http://localhost/"), {
    maxBytes: 1,
  });
  assert.deepEqual(empty, { text: "", floorTokens: 0 });
});

Deno.test("readBody() refuses a body over the limit with 413, from its content-length or as it arrives, and reads no more of it", async () => {
  const declared = streamed(["{}"], { "content-length": "2000" });
  await assert.rejects(
    readBody(declared.request, { maxBytes: 1000 }),
    (error) => error instanceof GatewayError && error.status === 413,
  );
  assert.equal(declared.seen.pulled, 0);
  const long = streamed(["[", "0,".repeat(400), "0,".repeat(400), "0]"]);
  await assert.rejects(
    readBody(long.request, { maxBytes: 1000 }),
    /Request body is larger than 1000 bytes/,
  );
  assert.equal(long.seen.pulled, 3);
  assert.ok(long.seen.cancelled);
});

Deno.test("readBody() stops at the first piece its check refuses: the rest is never read", async () => {
  const { request, seen } = streamed(["[", "0,".repeat(300), "0,", "0]"]);
  const floors: number[] = [];
  await assert.rejects(
    readBody(request, {
      maxBytes: 10_000,
      check: (floorTokens) => {
        floors.push(floorTokens);
        if (floorTokens > 50) throw new GatewayError(402, "Too much");
      },
    }),
    /Too much/,
  );
  assert.deepEqual(floors, [1, 101]);
  assert.equal(seen.pulled, 2);
  assert.ok(seen.cancelled);
});
