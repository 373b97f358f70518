import assert from "node:assert/strict";
import { BoundedLineBuffer, SentRequests } from "./_bounded_read.ts";
import { boundedFetch } from "./_bounded_http.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("BoundedLineBuffer passes lines under the limit and answers a tool call's oversized line with its start and a marker", () => {
  const requests = new SentRequests();
  requests.sent({ jsonrpc: "2.0", id: 7, method: "tools/call" });
  requests.sent({ jsonrpc: "2.0", id: 8, method: "prompts/get" });
  const buffer = new BoundedLineBuffer(requests, 1000);
  const small = { jsonrpc: "2.0", method: "notifications/message", params: {} };
  buffer.append(bytes(JSON.stringify(small) + "\n"));
  assert.deepEqual(buffer.readMessage(), small);
  assert.equal(buffer.readMessage(), null);

  // 5,000 bytes in chunks, with its id at the end as the SDK writes it.
  const big = JSON.stringify({
    result: { content: [{ type: "text", text: "z".repeat(5000) }] },
    jsonrpc: "2.0",
    id: 7,
  }) + "\n";
  for (let at = 0; at < big.length; at += 300) {
    buffer.append(bytes(big.slice(at, at + 300)));
  }
  const reply = buffer.readMessage() as unknown as {
    id: number;
    result: { content: { text: string }[] };
  };
  assert.equal(reply.id, 7);
  assert.match(reply.result.content[0].text, /^z{900,}$/);
  assert.match(
    reply.result.content[1].text,
    /^\[truncated: the environment's answer to tools\/call was over 1000 bytes \(at least \d+ read\): the runner read no more of it\]$/,
  );
  buffer.append(
    bytes(`{"jsonrpc":"2.0","id":8,"result":{"x":"${"q".repeat(2000)}"}}\n`),
  );
  const error = buffer.readMessage() as unknown as {
    id: number;
    error: { message: string };
  };
  assert.equal(error.id, 8);
  assert.match(
    error.error.message,
    /^Cannot read the environment's answer to prompts\/get/,
  );
  // An oversized line answering nothing known is dropped.
  buffer.append(
    bytes(`{"jsonrpc":"2.0","id":99,"result":{"x":"${"q".repeat(2000)}"}}\n`),
  );
  assert.equal(buffer.readMessage(), null);
});

Deno.test("boundedFetch answers an oversized JSON body or an endless event in place, and passes small ones whole", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/small") {
        return Response.json({ jsonrpc: "2.0", id: 1, result: { ok: true } });
      }
      const sse = path === "/sse";
      return new Response(
        new ReadableStream({
          pull(controller) {
            controller.enqueue(
              bytes(sse ? "data: " + "e".repeat(500) : "j".repeat(500)),
            );
          },
        }),
        {
          headers: {
            "content-type": sse ? "text/event-stream" : "application/json",
          },
        },
      );
    },
  );
  const fetch = boundedFetch(4000);
  const post = (path: string) =>
    fetch(`http://127.0.0.1:${server.addr.port}${path}`, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call" }),
    });
  assert.deepEqual(await (await post("/small")).json(), {
    jsonrpc: "2.0",
    id: 1,
    result: { ok: true },
  });
  const json = await (await post("/json")).json();
  assert.equal(json.id, 1);
  assert.match(json.result.content[1].text, /over 4000 bytes/);
  const events = await (await post("/sse")).text();
  assert.match(
    events,
    /^event: message\ndata: \{"jsonrpc":"2\.0","id":1,"result":/,
  );
  assert.match(events, /over 4000 bytes/);
});
