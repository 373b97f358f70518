import assert from "node:assert/strict";
import { errorTypeOf } from "../conventions.ts";
import { anthropicWire } from "./anthropic.ts";
import { geminiWire } from "./gemini.ts";
import { openaiWire } from "./openai.ts";
import { startSimulator } from "./mod.ts";

const STATUSES = [
  400,
  401,
  402,
  403,
  404,
  409,
  413,
  429,
  500,
  502,
  503,
  504,
  529,
];

Deno.test("the simulator's error types are the conventions' own, but where the real API differs", () => {
  const openaiApi: Record<number, string> = {
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "requests",
  };
  for (const status of STATUSES) {
    const openai = openaiWire.errorBody(status) as {
      error: { type: string; message: string };
    };
    assert.equal(
      openai.error.type,
      openaiApi[status] ?? errorTypeOf("openai", status),
      `openai ${status}`,
    );
    assert.ok(openai.error.message.length > 0);
    const anthropic = anthropicWire.errorBody(status) as {
      type: string;
      error: { type: string };
    };
    assert.equal(anthropic.type, "error");
    assert.equal(
      anthropic.error.type,
      status === 503 ? "overloaded_error" : errorTypeOf("anthropic", status),
      `anthropic ${status}`,
    );
    const gemini = geminiWire.errorBody(status) as {
      error: { code: number; status: string };
    };
    assert.equal(gemini.error.code, status);
    assert.equal(gemini.error.status, errorTypeOf("google", status));
  }
});

Deno.test("the simulator's error messages stay its own, and a given message wins", () => {
  const body = (wire: typeof openaiWire, status: number, message?: string) =>
    JSON.stringify(wire.errorBody(status, message));
  assert.match(body(openaiWire, 429), /Rate limit reached for requests/);
  assert.match(body(anthropicWire, 529), /"Overloaded"/);
  assert.match(body(geminiWire, 504), /Deadline expired/);
  for (const wire of [openaiWire, anthropicWire, geminiWire]) {
    assert.match(body(wire, 418, "Short and stout"), /Short and stout/);
  }
});

Deno.test("a token count whose body is not JSON is counted, not a server error", async () => {
  await using sim = await startSimulator();
  const response = await fetch(
    `${sim.baseUrls.anthropic}/v1/messages/count_tokens`,
    { method: "POST", headers: { "x-api-key": "k" }, body: "not json {" },
  );
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { input_tokens: 3 });
  assert.equal(sim.requests[0].body, "not json {");
});
