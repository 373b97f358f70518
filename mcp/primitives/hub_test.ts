import assert from "node:assert/strict";
import { z } from "zod";
import { BaseHub } from "./hub.ts";
import { ProtocolError } from "../_sdk.ts";

const extra = {} as Parameters<BaseHub["dispatch"]>[2];

Deno.test("BaseHub.tool() registers an internal tool and returns the function", () => {
  const hub = new BaseHub("setup");
  const fn = ({ to }: { to: number }) => `to ${to}`;
  assert.equal(
    hub.tool(
      "reset",
      { description: "Resets.", input: { to: z.number() } },
      fn,
    ),
    fn,
  );
  const bare = () => "bare";
  assert.equal(hub.tool("bare", bare), bare);
  assert.deepEqual(hub.tools.map((t) => [t.name, t.description]), [[
    "reset",
    "Resets.",
  ], ["bare", undefined]]);
  assert.throws(
    () => hub.tool("bare", bare),
    /Tool "bare" is already registered in hub "setup"/,
  );
});

Deno.test("BaseHub rejects a name that cannot be a URI scheme", () => {
  assert.throws(() => new BaseHub("set up"), /Cannot create hub "set up"/);
});

Deno.test("BaseHub.dispatch() parses JSON-string arguments and normalises the result", async () => {
  const hub = new BaseHub("evaluate");
  hub.tool(
    "score",
    { input: { target: z.number() } },
    ({ target }) => ({ reward: target > 2 ? 1 : 0, done: true }),
  );
  const result = await hub.dispatch("score", '{"target": 3}', extra);
  assert.deepEqual(result.structuredContent, { reward: 1, done: true });
  const bad = await hub.dispatch("score", "{not json", extra);
  assert.equal(bad.isError, true);
  assert.match(
    JSON.stringify(bad.content),
    /Cannot parse arguments of \\"evaluate\/score\\" as JSON/,
  );
});

Deno.test("BaseHub.dispatch() throws invalid params naming the field", async () => {
  const hub = new BaseHub("setup");
  hub.tool("reset", { input: { to: z.number() } }, () => {});
  await assert.rejects(
    hub.dispatch("reset", { to: "x" }, extra),
    (error: unknown) => {
      assert.ok(error instanceof ProtocolError);
      assert.equal(error.code, -32602);
      assert.match(
        error.message,
        /Invalid arguments for tool setup\/reset: to: /,
      );
      return true;
    },
  );
});

Deno.test("BaseHub.dispatcherInput() publishes the tool names as an enum and accepts any name", () => {
  const hub = new BaseHub("setup");
  hub.tool("a", () => {});
  hub.tool("b", () => {});
  const shape = z.object(hub.dispatcherInput());
  const schema = z.toJSONSchema(shape) as unknown as {
    properties: { name: { enum: string[] } };
  };
  assert.deepEqual(schema.properties.name.enum, ["a", "b"]);
  assert.ok(shape.safeParse({ name: "zzz", arguments: "{}" }).success);
  assert.match(hub.dispatcherDescription(), /- a\n- b/);
});

Deno.test("BaseHub.onChange() notifies on registration until unsubscribed", () => {
  const hub = new BaseHub("setup");
  let calls = 0;
  const unsubscribe = hub.onChange(() => calls++);
  hub.tool("a", () => {});
  unsubscribe();
  hub.tool("b", () => {});
  assert.equal(calls, 1);
});
