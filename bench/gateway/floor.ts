/**
 * The floor: the thinnest relay Deno can be, for the benchmarks to measure
 * the gateway against. `Deno.serve` + `fetch` + `new Response(upstream.body)`:
 * no auth, no money, no traces, no parsing. Every request goes to
 * `UPSTREAM` + its path, with its method, headers and body.
 *
 * `UPSTREAM=http://127.0.0.1:9000/openai/v1 deno run -A bench/gateway/floor.ts`
 * (strips a leading `/v1` from the path, so callers use the gateway's URLs)
 *
 * With `FLOOR_JS=1` the bodies go through JavaScript. A streamed answer is
 * read chunk by chunk from the upstream and enqueued into the caller's
 * stream, unparsed, the least a relay that looks at a stream must do: it
 * tells what of the gateway's cost per streamed chunk is Deno's stream
 * plumbing. A non-streamed call has its request read and parsed as JSON, the
 * model renamed and the request sent as text, and the answer read and parsed
 * (for its usage) and sent back as the text it came as: the least a gateway
 * that prices a call must do to its bodies.
 *
 * @module
 */
const upstream = Deno.env.get("UPSTREAM");
if (!upstream) {
  console.error("Set UPSTREAM to the base URL to relay to");
  Deno.exit(1);
}
const bodiesThroughJs = Deno.env.get("FLOOR_JS") === "1";
Deno.serve({
  port: Number(Deno.env.get("PORT") ?? 0),
  hostname: "127.0.0.1",
  onListen: ({ port }) =>
    console.error(`floor relay listening on http://127.0.0.1:${port}`),
}, async (request) => {
  const url = new URL(request.url);
  if (bodiesThroughJs) return relayThroughJs(request, url);
  const answer = await fetch(upstream + url.pathname.replace(/^\/v1/, ""), {
    method: request.method,
    headers: request.headers,
    body: request.body,
  });
  return new Response(answer.body, {
    status: answer.status,
    headers: answer.headers,
  });
});

async function relayThroughJs(request: Request, url: URL): Promise<Response> {
  const body = JSON.parse(await request.text());
  const answer = await fetch(upstream + url.pathname.replace(/^\/v1/, ""), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: request.headers.get("authorization") ?? "",
    },
    body: JSON.stringify({ ...body, model: body.model }),
  });
  if (body.stream) {
    return new Response(throughJs(answer.body!), {
      status: answer.status,
      headers: answer.headers,
    });
  }
  const text = await answer.text();
  if (typeof JSON.parse(text).usage !== "object") {
    return new Response("no usage", { status: 502 });
  }
  return new Response(text, {
    status: answer.status,
    headers: { "content-type": "application/json" },
  });
}

function throughJs(
  body: ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  // A byte stream takes the upstream's buffers over: the cheapest way found
  // to pass chunks through JavaScript (a default stream costs ~30 % more).
  return new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
