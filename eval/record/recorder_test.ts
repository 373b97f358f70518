import assert from "node:assert/strict";
import {
  gatewayTransport,
  type ModelRequest,
  type ModelResponse,
  type ModelTransport,
} from "../agents/model.ts";
import { Recorder } from "./recorder.ts";
import { firstDifference, ReplayDivergence, Replayer } from "./replay.ts";
import type { EvalResult } from "../run/result.ts";

const IMAGE = "iVBORw0KGgo".padEnd(2000, "A");

function request(
  traceId: string,
  step: number,
  messages: unknown[],
): ModelRequest {
  return {
    path: "/v1/chat/completions",
    headers: { "trace-id": traceId },
    body: { model: "m", messages },
    traceId,
    step,
  };
}

/** A model that answers with the number of messages it was sent. */
const model: ModelTransport = (req) =>
  Promise.resolve({
    status: 200,
    statusText: "OK",
    headers: {
      "x-gateway-cost": "$0.000100",
      "content-type": "application/json",
      "set-cookie": "secret=1",
    },
    body: JSON.stringify({
      seen: (req.body.messages as unknown[]).length,
      step: req.step,
    }),
  });

function result(task: number, traceId: string, steps: number): EvalResult {
  return {
    task,
    repeat: 0,
    scenario: "guess",
    args: { target: task },
    reward: 1,
    done: true,
    attempts: 1,
    steps,
    tokens: { input: 0, output: 0 },
    cost_usd: 0.0002,
    trace_id: traceId,
    convention: "chat",
    refused_tool_calls: 0,
    safety_checks: [],
    duration_ms: 1,
  };
}

const screenshot = (text: string) => ({
  role: "user",
  content: [{
    type: "image_url",
    image_url: { url: `data:image/png;base64,${IMAGE}` },
  }, {
    type: "text",
    text,
  }],
});

async function recordTwoRuns(dir: string): Promise<ModelResponse[]> {
  const recorder = await Recorder.create(dir);
  const send = recorder.wrap(model);
  const answers = [
    await send(request("run-a", 1, [{ role: "user", content: "play a" }])),
    await send(
      request("run-a", 2, [
        { role: "user", content: "play a" },
        screenshot("too low"),
      ]),
    ),
    await send(request("run-b", 1, [{ role: "user", content: "play b" }])),
  ];
  await recorder.finish("m", "chat", [
    result(1, "run-b", 1),
    result(0, "run-a", 2),
  ]);
  return answers;
}

Deno.test("firstDifference() names the first differing place, shortly", () => {
  assert.equal(firstDifference({ a: [1, 2] }, { a: [1, 2] }), undefined);
  assert.equal(
    firstDifference({ a: [1, 2] }, { a: [1, 3] }),
    "at a[1]: recorded 2, now 3",
  );
  assert.equal(
    firstDifference({ m: [{ c: "x" }] }, { m: [{ c: "x" }, { c: "y" }] }),
    'at m[1]: recorded (nothing), now {"c":"y"}',
  );
  const long = "The number is between 1 and 10. ".repeat(10);
  const line = firstDifference({ t: `${long}too low` }, {
    t: `${long}too high`,
  })!;
  assert.match(line, /^at t: recorded "….*too low", now "….*too high"$/);
  assert.ok(line.length < 200, line);
  assert.equal(
    firstDifference({ "odd key": 1 }, { "odd key": 2 }),
    'at ["odd key"]: recorded 1, now 2',
  );
});

Deno.test("a recording replays its answers with no cost, and images are kept once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-record-" });
  try {
    const answers = await recordTwoRuns(dir);
    const blobs = [...Deno.readDirSync(`${dir}/blobs`)];
    assert.equal(blobs.length, 1);
    const kept = JSON.parse(
      await Deno.readTextFile(`${dir}/exchanges/run-a/002.json`),
    );
    assert.match(
      kept.request.messages[1].content[0].image_url.url,
      /^data:image\/png;base64,@blob:[0-9a-f]{64}$/,
    );
    assert.equal(kept.response_headers["x-gateway-cost"], "$0.000100");
    assert.equal(kept.response_headers["set-cookie"], undefined);

    const replay = await Replayer.open(dir);
    assert.deepEqual(replay.tasks, [
      { scenario: "guess", args: { target: 0 } },
      { scenario: "guess", args: { target: 1 } },
    ]);
    assert.equal(replay.index.model, "m");
    // Runs get new trace ids; each is matched by its first request.
    const b = await replay.transport(
      request("new-1", 1, [{ role: "user", content: "play b" }]),
    );
    assert.equal(b.body, answers[2].body);
    assert.equal(b.replayed, true);
    assert.equal(b.headers["x-gateway-cost"], undefined);
    await replay.transport(
      request("new-2", 1, [{ role: "user", content: "play a" }]),
    );
    // A screenshot that differs in its pixels is the same place and type.
    const other = screenshot("too low");
    (other.content[0] as { image_url: { url: string } }).image_url.url =
      `data:image/png;base64,${IMAGE.replace(/A$/, "B")}`;
    const a2 = await replay.transport(
      request("new-2", 2, [{ role: "user", content: "play a" }, other]),
    );
    assert.equal(a2.body, answers[1].body);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a request that differs from the recording is a divergence naming the step and the difference", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-record-" });
  try {
    await recordTwoRuns(dir);
    const replay = await Replayer.open(dir);
    await replay.transport(
      request("r", 1, [{ role: "user", content: "play a" }]),
    );
    const diverged = await replay.transport(
      request("r", 2, [
        { role: "user", content: "play a" },
        screenshot("too high"),
      ]),
    ).then(() => undefined, (error) => error);
    assert.ok(diverged instanceof ReplayDivergence);
    assert.equal(diverged.step, 2);
    assert.match(
      diverged.message,
      /^Replay diverged at step 2 \(recorded task 0 "guess"\): the request differs at body\.messages\[1\]\.content\[1\]\.text: recorded "too low", now "too high"$/,
    );
    const beyond = await replay.transport(
      request("r", 3, [{ role: "user", content: "play a" }]),
    ).then(() => undefined, (error) => error);
    assert.match(beyond.message, /step 3 .*the recording ended after 2/);
    const unknown = await replay.transport(
      request("s", 1, [{ role: "user", content: "play c" }]),
    ).then(() => undefined, (error) => error);
    assert.ok(unknown instanceof ReplayDivergence);
    assert.match(
      unknown.message,
      /^Replay diverged at step 1: no recorded task starts with this request \(against recorded task 1 "guess"'s first request at body\.messages\[0\]\.content: recorded "play b", now "play c"\)$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a run tried again (a new trace id, the same first request) plays its recorded run again", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-record-" });
  try {
    const answers = await recordTwoRuns(dir);
    const replay = await Replayer.open(dir);
    for (const traceId of ["first-try", "second-try"]) {
      const answer = await replay.transport(
        request(traceId, 1, [{ role: "user", content: "play a" }]),
      );
      assert.equal(answer.body, answers[0].body);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a recording keeps no caller key, refuses to mix runs, and a bad folder is one line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-record-" });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.text();
      return Response.json({ ok: true }, {
        headers: { "x-gateway-cost": "$0.5" },
      });
    },
  );
  try {
    const recorder = await Recorder.create(`${dir}/rec`);
    const send = recorder.wrap(gatewayTransport({
      gatewayUrl: `http://127.0.0.1:${server.addr.port}`,
      key: "gk_secret_key_123",
    }));
    const answer = await send(
      request("t", 1, [{ role: "user", content: "hi" }]),
    );
    assert.equal(answer.status, 200);
    await recorder.finish("m", "chat", [result(0, "t", 1)]);
    for (const entry of Deno.readDirSync(`${dir}/rec/exchanges/t`)) {
      const text = await Deno.readTextFile(
        `${dir}/rec/exchanges/t/${entry.name}`,
      );
      assert.ok(!text.includes("gk_secret_key_123"));
    }
    await assert.rejects(
      () => Recorder.create(`${dir}/rec`),
      /already holds a recording: record into a new folder/,
    );
    await assert.rejects(
      () => Replayer.open(`${dir}/nothing`),
      /holds no recording \(no recording\.json\)/,
    );
    await Deno.writeTextFile(
      `${dir}/rec/recording.json`,
      '{"version": 1, "tasks": [{"trace_id": "../../etc"}]}',
    );
    await assert.rejects(
      () => Replayer.open(`${dir}/rec`),
      /recording\.json is not a recording of version 1/,
    );
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runs whose first requests are alike each replay their own task's recording, in whatever order they start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mcpkit-record-" });
  try {
    // Two tasks with the same prompt (the secret is not in it): their
    // first requests are alike, their second ones differ.
    const recorder = await Recorder.create(dir);
    const send = recorder.wrap(model);
    const same = [{ role: "user", content: "guess" }];
    const runs = [
      { traceId: "rec-0", task: 0, answer: "too low" },
      { traceId: "rec-1", task: 1, answer: "too high" },
    ];
    for (const { traceId, task, answer } of runs) {
      const run = { task, repeat: 0 };
      await send({ ...request(traceId, 1, same), run });
      await send({
        ...request(traceId, 2, [...same, { role: "user", content: answer }]),
        run,
      });
    }
    await recorder.finish("m", "chat", [
      result(0, "rec-0", 2),
      result(1, "rec-1", 2),
    ], {
      computerUse: { tool: "computer_toolset_20260801" },
      features: { forcedToolChoice: false },
    });

    const replay = await Replayer.open(dir);
    // The wire the runs were driven with, for the replay to drive again.
    assert.deepEqual(replay.index.computer_use, {
      tool: "computer_toolset_20260801",
    });
    assert.deepEqual(replay.index.features, { forced_tool_choice: false });
    // Task 1 starts first (concurrency): it must play rec-1, not rec-0.
    for (const { task, answer } of [...runs].reverse()) {
      const run = { task, repeat: 0 };
      const traceId = `replay-${task}`;
      await replay.transport({ ...request(traceId, 1, same), run });
      const second = await replay.transport({
        ...request(traceId, 2, [...same, { role: "user", content: answer }]),
        run,
      });
      assert.equal(second.status, 200);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
