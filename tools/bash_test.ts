import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { BashTool } from "./bash.ts";

function textOf(result: CallToolResult): string {
  return (result.content[0] as { text: string }).text;
}

function processAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

Deno.test("BashTool keeps the directory and variables between calls", async () => {
  const dir = await Deno.makeTempDir();
  await using bash = new BashTool({ cwd: dir, timeoutMs: 10_000 });
  assert.equal(
    textOf(
      await bash.call({
        command: "mkdir sub && cd sub && export GREETING=hello",
      }),
    ),
    "(no output)",
  );
  assert.equal(
    textOf(await bash.call({ command: 'pwd; echo "$GREETING"' })),
    `${await Deno.realPath(dir)}/sub\nhello`,
  );
});

Deno.test("BashTool merges stderr and reports a non-zero exit status", async () => {
  await using bash = new BashTool({ timeoutMs: 10_000 });
  const result = await bash.call({
    command: "echo out; echo err >&2; exit_code() { return 3; }; exit_code",
  });
  assert.equal(textOf(result), "out\nerr\n[exit status 3]");
  assert.equal(result.isError, undefined);
});

Deno.test("BashTool survives a syntax error and gives commands an empty stdin", async () => {
  await using bash = new BashTool({ timeoutMs: 5_000 });
  await bash.call({ command: "cd /" });
  const broken = await bash.call({ command: 'echo "unclosed' });
  assert.match(textOf(broken), /unexpected EOF[\s\S]*\[exit status 2\]/);
  assert.equal(textOf(await bash.call({ command: "pwd" })), "/", "same shell");
  assert.equal(
    textOf(await bash.call({ command: "cat; echo read-done" })),
    "read-done",
  );
});

Deno.test("BashTool kills a command past the time limit with everything it started, and restarts the shell", async () => {
  const dir = await Deno.makeTempDir();
  await using bash = new BashTool({ cwd: dir, timeoutMs: 500 });
  await bash.call({ command: "export MARK=before; cd /" });
  const started = performance.now();
  const result = await bash.call({
    command: `echo started; sleep 30 & echo $! > ${dir}/child.pid; sleep 30`,
  });
  assert.ok(performance.now() - started < 5_000);
  assert.equal(result.isError, true);
  assert.match(
    textOf(result),
    /^started\n\[The command did not finish within 0.5 s: the shell was killed and restarted/,
  );
  assert.equal(
    textOf(await bash.call({ command: 'pwd; echo "mark=$MARK"' })),
    `${await Deno.realPath(dir)}\nmark=`,
    "a fresh shell",
  );
  const child = Number(await Deno.readTextFile(`${dir}/child.pid`));
  // A killed child may stay a zombie until reaped; it must not be running.
  const state = await Deno.readTextFile(`/proc/${child}/stat`).then(
    (stat) => stat.split(" ")[2],
    () => "gone",
  );
  assert.ok(
    state === "gone" || state === "Z",
    `background child ${child} still runs (state ${state})`,
  );
});

Deno.test("BashTool caps long output, keeping head and tail with a marker", async () => {
  await using bash = new BashTool({ maxOutputChars: 200, timeoutMs: 10_000 });
  const text = textOf(await bash.call({ command: "seq 1 5000" }));
  assert.ok(text.startsWith("1\n2\n3\n"), text.slice(0, 20));
  assert.ok(text.endsWith("4999\n5000"), text.slice(-20));
  assert.match(
    text,
    /\[… \d+ characters of output cut here: results keep the first and last 100 …\]/,
  );
  assert.ok(text.length < 400, `capped: ${text.length}`);
});

Deno.test("BashTool restarts on request and after the shell exits", async () => {
  await using bash = new BashTool({ timeoutMs: 5_000 });
  await bash.call({ command: "export KEPT=1" });
  assert.equal(
    textOf(await bash.call({ restart: true })),
    "The shell was restarted.",
  );
  assert.equal(textOf(await bash.call({ command: 'echo "[$KEPT]"' })), "[]");
  await bash.call({ command: "export KEPT=2" });
  assert.match(
    textOf(await bash.call({ command: "exit 4" })),
    /The shell exited/,
  );
  assert.equal(textOf(await bash.call({ command: 'echo "[$KEPT]"' })), "[]");
});

Deno.test("BashTool does not pass the environment process's variables to the shell", async () => {
  Deno.env.set("MCP_HARNESS_TOKEN", "secret-token-for-test");
  try {
    await using bash = new BashTool({
      env: { EXTRA: "yes" },
      timeoutMs: 5_000,
    });
    const text = textOf(await bash.call({ command: "env" }));
    assert.ok(!text.includes("secret-token-for-test"), text);
    assert.match(text, /^EXTRA=yes$/m);
    assert.match(text, /^PATH=/m);
  } finally {
    Deno.env.delete("MCP_HARNESS_TOKEN");
  }
});

Deno.test("BashTool refuses an empty command and runs calls one at a time", async () => {
  await using bash = new BashTool({ timeoutMs: 5_000 });
  const empty = await bash.call({});
  assert.equal(empty.isError, true);
  assert.equal(textOf(empty), "Give a command to run, or restart: true");
  const [a, b] = await Promise.all([
    bash.call({ command: "sleep 0.2; echo first" }),
    bash.call({ command: "echo second" }),
  ]);
  assert.equal(textOf(a), "first");
  assert.equal(textOf(b), "second");
});

Deno.test("BashTool.close() kills the shell", async () => {
  const bash = new BashTool({ timeoutMs: 5_000 });
  const pid = Number(textOf(await bash.call({ command: "echo $$" })));
  assert.ok(processAlive(pid));
  await bash.close();
  await bash.close();
  assert.ok(!processAlive(pid));
});

Deno.test("BashTool's time-out and close() also kill what left the shell's process group (setsid), while it is still the shell's descendant", async () => {
  const dir = await Deno.makeTempDir();
  const bash = new BashTool({ cwd: dir, timeoutMs: 500 });
  const state = async (pid: number) =>
    await Deno.readTextFile(`/proc/${pid}/stat`).then(
      (stat) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0],
      () => "gone",
    );
  const pids: number[] = [];
  try {
    const escape = (name: string) =>
      `setsid bash -c 'echo $$ > ${dir}/${name}.pid; exec sleep 30' ` +
      `> /dev/null 2>&1 < /dev/null &`;
    const result = await bash.call({
      command: `${escape("timeout")} sleep 0.3; sleep 30`,
    });
    assert.equal(result.isError, true);
    pids.push(Number(await Deno.readTextFile(`${dir}/timeout.pid`)));
    await bash.call({ command: `${escape("close")} sleep 0.3` });
    pids.push(Number(await Deno.readTextFile(`${dir}/close.pid`)));
    await bash.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const pid of pids) {
      const s = await state(pid);
      assert.ok(s === "gone" || s === "Z", `process ${pid} still runs (${s})`);
    }
  } finally {
    for (const pid of pids) {
      if (processAlive(pid)) Deno.kill(pid, "SIGKILL");
    }
    await bash.close();
    await Deno.remove(dir, { recursive: true });
  }
});
