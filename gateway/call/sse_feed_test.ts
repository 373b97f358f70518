import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import { GatewayError } from "../errors.ts";
import { boundedFeed } from "./sse_feed.ts";

/** A parser behind a bounded feed, collecting its events' data. */
function collect(maxEventChars?: number) {
  const events: string[] = [];
  const lines = boundedFeed(
    (text) => parser.feed(text),
    "openai",
    maxEventChars,
  );
  const parser = createParser({
    onEvent(event) {
      lines.eventEnded(event.data.length);
      events.push(event.data);
    },
  });
  return { events, lines };
}

Deno.test("boundedFeed() hands the parser whole lines, whatever the cuts, with \\n, \\r\\n and \\r line ends", () => {
  const text =
    'data: {"a":1}\n\ndata: {"b":\r\ndata: 2}\r\n\r\ndata: 3\r\rdata: [DONE]\n\n';
  for (let cut = 1; cut < text.length; cut++) {
    const { events, lines } = collect();
    lines.feed(text.slice(0, cut));
    lines.feed(text.slice(cut));
    lines.flush();
    assert.deepEqual(
      events,
      ['{"a":1}', '{"b":\n2}', "3", "[DONE]"],
      `cut ${cut}`,
    );
  }
});

Deno.test("boundedFeed() ends a stream whose one event grows past the bound, on one line or many", () => {
  for (const line of ["x".repeat(4096), "data: y\n"]) {
    const { lines } = collect(100_000);
    assert.throws(
      () => {
        lines.feed("data: ");
        for (let i = 0; i < 20_000; i++) lines.feed(line);
      },
      (error: unknown) =>
        error instanceof GatewayError && error.status === 502 &&
        error.code === "upstream_event_too_large",
    );
  }
  // Many events, each under the bound, pass whatever their total.
  const { events, lines } = collect(1_000);
  for (let i = 0; i < 2_000; i++) lines.feed(`data: ${"z".repeat(500)}\n\n`);
  assert.equal(events.length, 2_000);
});

Deno.test("boundedFeed() parses an 8 MB event in 4 KiB reads in time linear in its size", () => {
  const timeFor = (chars: number) => {
    const { events, lines } = collect(64 * 1024 * 1024);
    const piece = "a".repeat(4096);
    const started = performance.now();
    lines.feed("data: ");
    for (let fed = 0; fed < chars; fed += piece.length) lines.feed(piece);
    lines.feed("\n\n");
    assert.equal(events.length, 1);
    return performance.now() - started;
  };
  // The best of three runs: the machine is shared.
  const best = (chars: number) =>
    Math.min(timeFor(chars), timeFor(chars), timeFor(chars));
  best(1024 * 1024); // warm-up
  const small = best(2 * 1024 * 1024);
  const large = best(8 * 1024 * 1024);
  // Quadratic took 6.5 s at 8 MB and 16 times the 2 MB time; linear, 4 times.
  assert.ok(large < 2_000, `8 MB took ${large.toFixed(0)} ms`);
  assert.ok(
    large < small * 10 + 100,
    `2 MB ${small.toFixed(0)} ms, 8 MB ${large.toFixed(0)} ms`,
  );
});
