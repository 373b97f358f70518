import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { BashTool, shellIsolation } from "./bash.ts";

function textOf(result: CallToolResult): string {
  return (result.content[0] as { text: string }).text;
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
  const mark = `mcpkit-child-${crypto.randomUUID()}`;
  await bash.call({ command: "export MARK=before; cd /" });
  const started = performance.now();
  const result = await bash.call({
    command: `echo started; bash -c 'exec -a ${mark} sleep 30' & sleep 30`,
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
  assert.deepEqual(
    await running(mark),
    [],
    "the background child was killed with the shell",
  );
});

/** Host pids of running processes whose command line holds `mark`. */
async function running(mark: string): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const [cmdline, stat] = await Promise.all([
      Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => ""),
      Deno.readTextFile(`/proc/${entry.name}/stat`).catch(() => ""),
    ]);
    // A killed process may stay a zombie until reaped: it does not run.
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    if (cmdline.includes(mark) && state !== "Z") found.push(Number(entry.name));
  }
  return found;
}

Deno.test("BashTool kills a double-forked process that left the shell's session, on time-out and on close, in a PID namespace and under the reaper", async () => {
  const dir = await Deno.makeTempDir();
  const { isolation: best } = await shellIsolation();
  const modes = [...new Set([best, "reaper" as const])];
  for (const ending of ["timeout", "close"] as const) {
    for (const isolation of modes) {
      const mark = `mcpkit-escape-${crypto.randomUUID()}`;
      const bash = new BashTool({ cwd: dir, timeoutMs: 1_000, isolation });
      const escape =
        `(setsid bash -c 'exec -a ${mark} sleep 300' < /dev/null > /dev/null 2>&1 &)`;
      await bash.call({ command: escape });
      for (let i = 0; i < 50 && (await running(mark)).length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(
        (await running(mark)).length,
        1,
        `the escapee runs (${isolation})`,
      );
      if (ending === "timeout") {
        const result = await bash.call({ command: "sleep 30" });
        assert.equal(result.isError, true);
      }
      await bash.close();
      assert.deepEqual(
        await running(mark),
        [],
        `killed on ${ending} (${isolation})`,
      );
    }
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Nothing bash runs can read the harness token from the environment process's /proc/<pid>/environ", async () => {
  const { isolation } = await shellIsolation();
  const token = `harness-${crypto.randomUUID()}`;
  const bash = new URL("./bash.ts", import.meta.url).href;
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { BashTool } from "${bash}";
       await using tool = new BashTool();
       const result = await tool.call({ command: "grep -l -s -a ${token} /proc/[0-9]*/environ; echo end" });
       console.log(JSON.stringify(result.content[0].text));`,
    ],
    env: { MCP_HARNESS_TOKEN: token },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const text = JSON.parse(new TextDecoder().decode(output.stdout));
  if (isolation === "session") {
    console.log(
      "bash token test: no PID namespace on this host, so the token stays readable (docs/desktop.md says so)",
    );
    return;
  }
  assert.equal(text, "end", `bash found the token in: ${text}`);
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

Deno.test("BashTool.close() kills the shell and its children, and may be called twice", async () => {
  const bash = new BashTool({ timeoutMs: 5_000 });
  const mark = `mcpkit-close-${crypto.randomUUID()}`;
  await bash.call({ command: `bash -c 'exec -a ${mark} sleep 300' &` });
  for (let i = 0; i < 50 && (await running(mark)).length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal((await running(mark)).length, 1);
  await bash.close();
  await bash.close();
  assert.deepEqual(await running(mark), []);
});
