import assert from "node:assert/strict";
import { gatewayTransport, MAX_MODEL_ANSWER_BYTES } from "./model.ts";

const CHUNK = new Uint8Array(1024 * 1024).fill(0x61);

Deno.test("gatewayTransport() reads a model's answer only up to its bound, then refuses it in one line", async () => {
  let sent = 0;
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            // Endless: the runner must stop reading, not the server.
            sent += CHUNK.length;
            controller.enqueue(CHUNK);
          },
        }),
        { headers: { "content-type": "application/json" } },
      ),
  );
  const send = gatewayTransport({
    gatewayUrl: `http://127.0.0.1:${server.addr.port}`,
    key: "gk_test",
  });
  await assert.rejects(
    send({
      path: "/v1/chat/completions",
      body: {},
      headers: {},
      traceId: "t",
      step: 0,
    }),
    (error: Error) =>
      error instanceof RangeError &&
      error.message ===
        `The model's answer was over ${MAX_MODEL_ANSWER_BYTES} bytes: the runner read no more of it`,
  );
  assert.ok(
    sent < 4 * MAX_MODEL_ANSWER_BYTES,
    `the server wrote ${sent} bytes`,
  );
});

Deno.test("gatewayTransport() passes an ordinary answer through whole", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      Response.json({ ok: true }, {
        headers: { "x-gateway-cost": "$0.000125" },
      }),
  );
  const send = gatewayTransport({
    gatewayUrl: `http://127.0.0.1:${server.addr.port}`,
    key: "gk_test",
  });
  const answer = await send({
    path: "/v1/chat/completions",
    body: {},
    headers: {},
    traceId: "t",
    step: 0,
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.body, '{"ok":true}');
  assert.equal(answer.headers["x-gateway-cost"], "$0.000125");
});
