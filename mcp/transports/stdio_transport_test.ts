import assert from "node:assert/strict";
import { DenoStdioTransport } from "./stdio_transport.ts";
import type { JSONRPCMessage } from "../_sdk.ts";

Deno.test("DenoStdioTransport reads newline-delimited messages and closes at end of input", async () => {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const chunks: Uint8Array[] = [];
  const output = new WritableStream<Uint8Array>({
    write: (chunk) => void chunks.push(chunk),
  });
  const transport = new DenoStdioTransport(input.readable, output);
  const received: JSONRPCMessage[] = [];
  const closed = Promise.withResolvers<void>();
  transport.onmessage = (message) => received.push(message);
  transport.onclose = () => closed.resolve();
  await transport.start();
  const writer = input.writable.getWriter();
  const encoder = new TextEncoder();
  await writer.write(
    encoder.encode(
      '{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0",',
    ),
  );
  await writer.write(encoder.encode('"method":"notifications/initialized"}\n'));
  await transport.send({ jsonrpc: "2.0", id: 1, result: {} });
  await writer.close();
  await closed.promise;
  assert.deepEqual(received, [
    { jsonrpc: "2.0", id: 1, method: "ping" },
    { jsonrpc: "2.0", method: "notifications/initialized" },
  ]);
  const written = new TextDecoder().decode(chunks[0]);
  assert.equal(written, '{"jsonrpc":"2.0","id":1,"result":{}}\n');
});
