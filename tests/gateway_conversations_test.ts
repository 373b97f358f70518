/**
 * A Responses conversation created through the gateway (`POST
 * /v1/conversations`) is pinned to the key that created it: Responses calls
 * naming it, through two gateway processes on one KV file, all reach that
 * key, against a loopback OpenAI whose three keys are three organizations
 * (each knows only its own conversations). Another caller cannot use it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import OpenAI from "openai";
import { createCaller } from "../gateway/state/callers.ts";
import { usdToMicros } from "../gateway/state/credits/money.ts";
import { spawnGateway } from "./_gateway_e2e.ts";

const KEYS = [
  "sk-conv-org-a-0123456789abcdef",
  "sk-conv-org-b-0123456789abcdef",
  "sk-conv-org-c-0123456789abcdef",
];

/** A loopback OpenAI: conversations belong to the key that created them. */
function startOrganizations() {
  const owner = new Map<string, string>();
  const served: string[] = [];
  let n = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const key = request.headers.get("authorization")!.replace("Bearer ", "");
      const body = await request.json();
      const path = new URL(request.url).pathname;
      if (path === "/v1/conversations") {
        const id = `conv_${++n}`;
        owner.set(id, key);
        return Response.json({
          id,
          object: "conversation",
          created_at: 1,
          metadata: body.metadata ?? {},
        });
      }
      const conversation = typeof body.conversation === "string"
        ? body.conversation
        : body.conversation?.id;
      if (conversation && owner.get(conversation) !== key) {
        return Response.json({
          error: {
            message: `Conversation with id '${conversation}' not found.`,
            type: "invalid_request_error",
            param: "conversation",
            code: null,
          },
        }, { status: 404 });
      }
      served.push(key);
      return Response.json({
        id: `resp_${++n}`,
        object: "response",
        status: "completed",
        model: body.model,
        output: [{
          type: "message",
          id: `msg_${n}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "ok", annotations: [] }],
        }],
        usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      });
    },
  );
  return {
    served,
    base: `http://127.0.0.1:${server.addr.port}/v1`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("a conversation created through the gateway keeps its key for every Responses call naming it, across two processes, and stays its caller's", async () => {
  await using openai = startOrganizations();
  const dir = await Deno.makeTempDir();
  const kvPath = join(dir, "gateway.kv");
  const kv = await Deno.openKv(kvPath);
  const [caller, stranger] = [
    await createCaller(kv, { name: "conv", creditsMicros: usdToMicros(5) }),
    await createCaller(kv, { name: "other", creditsMicros: usdToMicros(5) }),
  ];
  kv.close();
  const env = {
    GATEWAY_KV_PATH: kvPath,
    OPENAI_BASE_URL: openai.base,
    OPENAI_API_KEYS: KEYS.join(","),
  };
  const gateways = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  try {
    const client = (index: number, key = caller.key) =>
      new OpenAI({
        baseURL: `${gateways[index].url}/v1`,
        apiKey: key,
        maxRetries: 0,
      });
    const conversation = await client(0).conversations.create({
      metadata: { topic: "form" },
    });
    assert.match(conversation.id, /^conv_/);
    for (let turn = 0; turn < 6; turn++) {
      const response = await client(turn % 2).responses.create({
        model: "gpt-5.1",
        input: `turn ${turn}`,
        conversation: turn % 2 ? { id: conversation.id } : conversation.id,
      });
      assert.equal(response.status, "completed");
    }
    assert.equal(openai.served.length, 6);
    assert.equal(new Set(openai.served).size, 1, openai.served.join(", "));
    const refused = await client(1, stranger.key).responses.create({
      model: "gpt-5.1",
      input: "what did they say?",
      conversation: conversation.id,
    }).then(() => undefined, (error: unknown) => error);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.code, "conversation_not_found");
    assert.equal(openai.served.length, 6, "the stranger's call reached no key");
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await Deno.remove(dir, { recursive: true });
  }
});
