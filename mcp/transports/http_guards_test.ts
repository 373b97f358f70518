import assert from "node:assert/strict";
import { peerAddress, showsHarnessToken } from "./http_guards.ts";

const TOKEN = "the-harness-token";

function post(headers: Record<string, string> = {}): Request {
  return new Request("http://127.0.0.1/mcp", { method: "POST", headers });
}

function initialize(meta: Record<string, unknown>) {
  return {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { _meta: meta },
  };
}

Deno.test("showsHarnessToken() accepts the token as a Bearer header or in an initialize's _meta, one message or a batch", () => {
  assert.equal(
    showsHarnessToken(
      post({ authorization: `Bearer ${TOKEN}` }),
      undefined,
      TOKEN,
    ),
    true,
  );
  assert.equal(
    showsHarnessToken(post(), initialize({ harness_token: TOKEN }), TOKEN),
    true,
  );
  assert.equal(
    showsHarnessToken(post(), [initialize({ harness_token: TOKEN })], TOKEN),
    true,
  );
});

Deno.test("showsHarnessToken() refuses a wrong token, a token outside initialize, and everyone when no token is set", () => {
  assert.equal(
    showsHarnessToken(
      post({ authorization: "Bearer wrong" }),
      undefined,
      TOKEN,
    ),
    false,
  );
  assert.equal(
    showsHarnessToken(post(), initialize({ harness_token: "wrong" }), TOKEN),
    false,
  );
  assert.equal(
    showsHarnessToken(
      post(),
      {
        jsonrpc: "2.0",
        id: 1,
        method: "ping",
        params: { _meta: { harness_token: TOKEN } },
      },
      TOKEN,
    ),
    false,
  );
  assert.equal(showsHarnessToken(post(), null, TOKEN), false);
  assert.equal(
    showsHarnessToken(
      post({ authorization: `Bearer ${TOKEN}` }),
      undefined,
      undefined,
    ),
    false,
  );
});

Deno.test("peerAddress() reads Deno.serve's remote address, undefined in process", () => {
  assert.equal(
    peerAddress({
      remoteAddr: { hostname: "127.0.0.2", port: 1, transport: "tcp" },
    }),
    "127.0.0.2",
  );
  assert.equal(peerAddress(undefined), undefined);
  assert.equal(peerAddress({}), undefined);
});
