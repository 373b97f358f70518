/**
 * OpenAI's Responses API (`POST /responses`), as the simulator speaks it,
 * streamed and not.
 *
 * The computer-use agent plays when a computer tool is declared: the GA
 * `{"type": "computer"}` tool (batched `actions`: a screenshot, then the rest
 * in one call) or `computer_use_preview` (one `action` per call; its
 * `display_width` / `display_height` give the screen; see
 * `openai_responses_computer.ts`). It answers `computer_call` items and
 * reads the history back from `input` and the stored conversation. A call that carries a pending safety check
 * must be answered with that check in `acknowledged_safety_checks`, else the
 * request is refused with 400.
 *
 * Each response is stored under the API key that created it (each key its
 * own organization; `store: false` keeps nothing; see `response_store.ts`),
 * and `previous_response_id` continues that conversation: its items come
 * before the request's `input`. An id the key's organization does not have
 * is refused with OpenAI's 400 `previous_response_not_found`.
 *
 * @module
 */

import type { Json } from "./_json.ts";
import type { Dialect, ParsedRequest, RequestContext } from "./request_flow.ts";
import type { SimulatedEvent } from "./answers.ts";
import { openaiWire, requireModel, usageNumbers } from "./openai.ts";
import { computerCallItem } from "./openai_responses_computer.ts";
import type { Reply } from "./reply.ts";
import { splitEvenly, splitText } from "./tokens.ts";
import { checkComputerTools, checkToolChoice } from "./openai_rules.ts";
import {
  inputItems,
  parseResponses,
  previousItems,
} from "./openai_responses_input.ts";

function responsesUsage(reply: Reply): Json {
  const { input, output, cached } = usageNumbers(reply);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function responsesRequest(body: Json, context: RequestContext): ParsedRequest {
  const facts = context.model(requireModel(body));
  checkComputerTools(body, facts);
  checkToolChoice(body, facts);
  const ownItems = inputItems(body);
  const { prompt, model } = parseResponses(body, [
    ...previousItems(body, context),
    ...ownItems,
  ]);
  // Kept under the caller's organization, as OpenAI keeps a response unless
  // `store: false`; the next turn can then continue from it.
  const remember = (id: string, response: Json) => {
    if (body.store === false) return;
    context.responses.put(
      context.key,
      `resp_${id}`,
      typeof body.previous_response_id === "string"
        ? body.previous_response_id
        : undefined,
      [...ownItems, ...response.output as Json[]],
      response,
    );
  };
  const createdAt = Math.floor(Date.now() / 1000);
  const envelope = (
    id: string,
    status: string,
    output: Json[],
    reply?: Reply,
  ): Json => ({
    id: `resp_${id}`,
    object: "response",
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === "incomplete"
      ? { reason: "max_output_tokens" }
      : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: "text" }, verbosity: "medium" },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? "disabled",
    usage: reply ? responsesUsage(reply) : null,
    user: null,
    metadata: body.metadata ?? {},
  });
  const finalStatus = (
    reply: Reply,
  ) => (reply.stop === "length" ? "incomplete" : "completed");
  const outputItem = (reply: Reply, id: string, done: boolean): Json => {
    const { content } = reply;
    const status = done ? "completed" : "in_progress";
    if (content.kind === "computer") {
      return computerCallItem(content, id, done, prompt.computer?.batched);
    }
    if (content.kind === "tool") {
      return {
        id: `fc_${id}`,
        type: "function_call",
        status,
        arguments: done ? content.arguments : "",
        call_id: `call_${id}`,
        name: content.name,
      };
    }
    return {
      id: `msg_${id}`,
      type: "message",
      status: done
        ? (reply.stop === "length" ? "incomplete" : "completed")
        : status,
      content: done
        ? [{
          type: "output_text",
          annotations: [],
          logprobs: [],
          text: content.text,
        }]
        : [],
      role: "assistant",
    };
  };
  // The computer-use model reasons before each action: a reasoning item
  // (with an empty summary unless one is asked for) precedes the call.
  const leadingItems = (reply: Reply, id: string): Json[] =>
    reply.content.kind === "computer"
      ? [{ id: `rs_${id}`, type: "reasoning", summary: [] }]
      : [];
  return {
    prompt,
    stream: body.stream === true,
    body(reply, id) {
      const output = [...leadingItems(reply, id), outputItem(reply, id, true)];
      const response = envelope(id, finalStatus(reply), output, reply);
      remember(id, response);
      return response;
    },
    events(reply, id) {
      const events: SimulatedEvent[] = [];
      const push = (type: string, fields: Json) => {
        events.push({
          event: type,
          data: JSON.stringify({
            type,
            sequence_number: events.length,
            ...fields,
          }),
        });
      };
      push("response.created", { response: envelope(id, "in_progress", []) });
      push("response.in_progress", {
        response: envelope(id, "in_progress", []),
      });
      const leading = leadingItems(reply, id);
      leading.forEach((item, index) => {
        push("response.output_item.added", { output_index: index, item });
        push("response.output_item.done", { output_index: index, item });
      });
      const index = leading.length;
      push("response.output_item.added", {
        output_index: index,
        item: outputItem(reply, id, false),
      });
      // A computer_call has no deltas: the item is whole when added.
      const { content } = reply;
      if (content.kind === "tool") {
        const itemId = `fc_${id}`;
        for (const delta of splitEvenly(content.arguments, 4)) {
          push("response.function_call_arguments.delta", {
            item_id: itemId,
            output_index: index,
            delta,
          });
        }
        push("response.function_call_arguments.done", {
          item_id: itemId,
          output_index: index,
          name: content.name,
          arguments: content.arguments,
        });
      } else if (content.kind === "text") {
        const itemId = `msg_${id}`;
        const where = {
          item_id: itemId,
          output_index: index,
          content_index: 0,
        };
        push("response.content_part.added", {
          ...where,
          part: {
            type: "output_text",
            annotations: [],
            logprobs: [],
            text: "",
          },
        });
        for (const delta of splitText(content.text)) {
          push("response.output_text.delta", { ...where, delta, logprobs: [] });
        }
        push("response.output_text.done", {
          ...where,
          text: content.text,
          logprobs: [],
        });
        push("response.content_part.done", {
          ...where,
          part: {
            type: "output_text",
            annotations: [],
            logprobs: [],
            text: content.text,
          },
        });
      }
      const item = outputItem(reply, id, true);
      push("response.output_item.done", { output_index: index, item });
      const status = finalStatus(reply);
      const response = envelope(id, status, [...leading, item], reply);
      remember(id, response);
      push(`response.${status}`, { response });
      return events;
    },
  };
}

/** The Responses endpoint (`POST /responses`). */
export const responses: Dialect = {
  wire: openaiWire,
  parse: (body, _url, context) => responsesRequest(body as Json, context),
};
