/**
 * Per-route knowledge the end-to-end gateway suites share: how to call each
 * route, how to read its answer (whole or streamed), what its error bodies
 * look like, and where the simulator should see the upstream request.
 */
import assert from "node:assert/strict";
import { EventSourceParserStream } from "eventsource-parser/stream";
import type { CatalogEntry } from "../gateway/state/catalog.ts";
import type { RouteName } from "../gateway/conventions.ts";

/** Every call route, in a fixed order. */
export const ROUTES: readonly RouteName[] = [
  "chat",
  "messages",
  "responses",
  "gemini",
];

/** The two prefixes every path is served under. */
export const PREFIXES: readonly string[] = ["", "/v1"];

/** The prompt the helpers send; the simulator answers `Echo: <prompt>`. */
export const PROMPT = "hello gateway";

/**
 * The path of a call on `route` (without the bare-or-`/v1` prefix).
 *
 * @param route The route.
 * @param model The model id (Gemini carries it in the path).
 * @param stream Whether to ask for a stream.
 * @returns The path, with Gemini's `alt=sse` query when streaming.
 */
export function callPath(
  route: RouteName,
  model: string,
  stream: boolean,
): string {
  switch (route) {
    case "chat":
      return "/chat/completions";
    case "messages":
      return "/messages";
    case "responses":
      return "/responses";
    case "gemini":
      return stream
        ? `/v1beta/models/${model}:streamGenerateContent?alt=sse`
        : `/v1beta/models/${model}:generateContent`;
  }
}

/**
 * A minimal valid request body for `route`.
 *
 * @param route The route.
 * @param model The model id (ignored on Gemini, where it is in the path).
 * @param stream Whether to ask for a stream.
 * @param text The user's message.
 * @returns The JSON body.
 */
export function callBody(
  route: RouteName,
  model: string,
  stream: boolean,
  text: string = PROMPT,
): Record<string, unknown> {
  switch (route) {
    case "chat":
      return { model, stream, messages: [{ role: "user", content: text }] };
    case "messages":
      return {
        model,
        stream,
        max_tokens: 256,
        messages: [{ role: "user", content: text }],
      };
    case "responses":
      return { model, stream, input: text };
    case "gemini":
      return { contents: [{ role: "user", parts: [{ text }] }] };
  }
}

/** One server-sent event as received. */
export interface ReceivedEvent {
  /** The `event:` name, if any. */
  event?: string;
  /** The `data:` text. */
  data: string;
}

/**
 * Reads a whole SSE response.
 *
 * @param response A `text/event-stream` response.
 * @returns Its events, in order.
 */
export async function readSse(response: Response): Promise<ReceivedEvent[]> {
  assert.match(
    response.headers.get("content-type") ?? "",
    /text\/event-stream/,
  );
  const events: ReceivedEvent[] = [];
  const stream = response.body!
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const { event, data } of stream) {
    events.push(event ? { event, data } : { data });
  }
  return events;
}

/**
 * The assistant text of a non-streamed answer in `route`'s convention.
 *
 * @param route The route.
 * @param body The parsed JSON answer.
 * @returns The text.
 */
export function answerText(route: RouteName, body: unknown): string {
  // deno-lint-ignore no-explicit-any
  const json = body as any;
  switch (route) {
    case "chat":
      assert.equal(json.object, "chat.completion");
      return json.choices[0].message.content;
    case "messages":
      assert.equal(json.type, "message");
      return json.content.map((block: { text?: string }) => block.text ?? "")
        .join("");
    case "responses":
      assert.equal(json.object, "response");
      return json.output.flatMap((item: { content?: { text?: string }[] }) =>
        item.content ?? []
      ).map((part: { text?: string }) => part.text ?? "").join("");
    case "gemini":
      return json.candidates[0].content.parts.map((part: { text?: string }) =>
        part.text ?? ""
      ).join("");
  }
}

/**
 * The assistant text of a streamed answer in `route`'s convention, checking
 * that the stream ended with the convention's terminal event.
 *
 * @param route The route.
 * @param events The events received.
 * @returns The joined text deltas.
 */
export function streamedText(
  route: RouteName,
  events: ReceivedEvent[],
): string {
  const json = (e: ReceivedEvent) => JSON.parse(e.data);
  switch (route) {
    case "chat":
      assert.equal(events.at(-1)?.data, "[DONE]");
      return events.slice(0, -1).map((e) =>
        json(e).choices[0]?.delta?.content ?? ""
      ).join("");
    case "messages":
      assert.equal(events.at(-1)?.event, "message_stop");
      return events.filter((e) => e.event === "content_block_delta")
        .map((e) => json(e).delta.text ?? "").join("");
    case "responses":
      assert.equal(events.at(-1)?.event, "response.completed");
      return events.filter((e) => e.event === "response.output_text.delta")
        .map((e) => json(e).delta).join("");
    case "gemini":
      assert.ok(json(events.at(-1)!).candidates[0].finishReason);
      return events.map((e) =>
        (json(e).candidates?.[0]?.content?.parts ?? []).map((
          part: { text?: string },
        ) => part.text ?? "").join("")
      ).join("");
  }
}

/**
 * Asserts that `response` is an error with `status` in `route`'s convention
 * and returns its message.
 *
 * @param route The route whose convention applies.
 * @param response The response.
 * @param status The expected HTTP status.
 * @returns The error message.
 */
export async function assertRouteError(
  route: RouteName,
  response: Response,
  status: number,
): Promise<string> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /application\/json/);
  return errorMessageOf(route, JSON.parse(text), status);
}

/**
 * Checks an error body's shape in `route`'s convention.
 *
 * @param route The route whose convention applies.
 * @param body The parsed error body.
 * @param status The HTTP status (Google repeats it as `error.code`).
 * @returns The error message.
 */
export function errorMessageOf(
  route: RouteName,
  body: unknown,
  status: number,
): string {
  // deno-lint-ignore no-explicit-any
  const json = body as any;
  switch (route) {
    case "chat":
    case "responses":
      assert.deepEqual(Object.keys(json), ["error"]);
      assert.deepEqual(Object.keys(json.error).sort(), [
        "code",
        "message",
        "param",
        "type",
      ]);
      assert.equal(typeof json.error.type, "string");
      assert.ok(
        json.error.param === null || typeof json.error.param === "string",
      );
      assert.equal(typeof json.error.message, "string");
      return json.error.message;
    case "messages":
      assert.equal(json.type, "error");
      assert.deepEqual(Object.keys(json.error).sort(), ["message", "type"]);
      assert.match(json.error.type, /_error$|^request_too_large$/);
      assert.equal(typeof json.error.message, "string");
      return json.error.message;
    case "gemini":
      assert.deepEqual(Object.keys(json), ["error"]);
      assert.equal(json.error.code, status);
      assert.match(json.error.status, /^[A-Z_]+$/);
      assert.equal(typeof json.error.message, "string");
      return json.error.message;
  }
}

/**
 * Where the simulator should receive `entry`'s call on `route`: the provider
 * path under the simulator and, for bodies that carry it, the model id.
 *
 * @param entry The catalog entry.
 * @param route The caller's route.
 * @param stream Whether the call streams.
 * @returns The expected simulator path and query `alt`.
 */
export function upstreamTarget(
  entry: CatalogEntry,
  route: RouteName,
  stream: boolean,
): { path: string; alt?: string } {
  switch (entry.provider) {
    case "anthropic":
      return { path: "/anthropic/v1/messages" };
    case "gemini":
      return stream
        ? {
          path: `/gemini/v1beta/models/${entry.upstream}:streamGenerateContent`,
          alt: "sse",
        }
        : { path: `/gemini/v1beta/models/${entry.upstream}:generateContent` };
    default: {
      const base = {
        openai: "/openai/v1",
        xai: "/xai/v1",
        openrouter: "/openrouter/api/v1",
      }[entry.provider];
      return {
        path: `${base}${
          route === "responses" ? "/responses" : "/chat/completions"
        }`,
      };
    }
  }
}
