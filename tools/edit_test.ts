import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { EditTool } from "./edit.ts";
import type { EditInput } from "./edit_input.ts";

function textOf(result: CallToolResult): string {
  return (result.content[0] as { text: string }).text;
}

async function workspace(
  options: { maxFileBytes?: number; maxOutputChars?: number } = {},
) {
  const base = await Deno.realPath(await Deno.makeTempDir());
  const root = `${base}/root`;
  await Deno.mkdir(root);
  const edit = new EditTool({ root, ...options });
  const call = (input: EditInput) => edit.call(input);
  return {
    base,
    root,
    edit,
    call,
    [Symbol.asyncDispose]: () => Deno.remove(base, { recursive: true }),
  };
}

Deno.test("EditTool creates, views with line numbers, and views a range", async () => {
  await using ws = await workspace();
  const created = await ws.call({
    command: "create",
    path: "src/app.py",
    file_text: "one\ntwo\nthree\n",
  });
  assert.equal(textOf(created), `Created ${ws.root}/src/app.py`);
  assert.equal(
    await Deno.readTextFile(`${ws.root}/src/app.py`),
    "one\ntwo\nthree\n",
  );
  const view = await ws.call({
    command: "view",
    path: `${ws.root}/src/app.py`,
  });
  assert.equal(
    textOf(view),
    `Here is ${ws.root}/src/app.py with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree`,
  );
  const part = await ws.call({
    command: "view",
    path: "src/app.py",
    view_range: [2, -1],
  });
  assert.ok(textOf(part).endsWith("\n     2\ttwo\n     3\tthree"));
  const bad = await ws.call({
    command: "view",
    path: "src/app.py",
    view_range: [3, 9],
  });
  assert.equal(bad.isError, true);
  assert.match(
    textOf(bad),
    /view_range ends at 9: expected -1 or a line from 3 to 3/,
  );
});

Deno.test("EditTool refuses to create over an existing file", async () => {
  await using ws = await workspace();
  await Deno.writeTextFile(`${ws.root}/a.txt`, "keep");
  const result = await ws.call({
    command: "create",
    path: "a.txt",
    file_text: "lost",
  });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /already exists/);
  assert.equal(await Deno.readTextFile(`${ws.root}/a.txt`), "keep");
});

Deno.test("EditTool lists a directory two levels deep without hidden entries", async () => {
  await using ws = await workspace();
  await Deno.mkdir(`${ws.root}/a/b/c`, { recursive: true });
  await Deno.writeTextFile(`${ws.root}/a/b/c/deep.txt`, "");
  await Deno.writeTextFile(`${ws.root}/a/file.txt`, "");
  await Deno.writeTextFile(`${ws.root}/.secret`, "");
  const text = textOf(await ws.call({ command: "view", path: "." }));
  const lines = text.split("\n").slice(1);
  assert.deepEqual(lines, [
    ws.root,
    `${ws.root}/a/`,
    `${ws.root}/a/b/`,
    `${ws.root}/a/file.txt`,
  ]);
});

Deno.test("EditTool str_replace needs exactly one occurrence", async () => {
  await using ws = await workspace();
  await Deno.writeTextFile(`${ws.root}/f.txt`, "alpha\nbeta\nalpha\ngamma\n");
  const twice = await ws.call({
    command: "str_replace",
    path: "f.txt",
    old_str: "alpha",
    new_str: "x",
  });
  assert.equal(twice.isError, true);
  assert.match(textOf(twice), /occurs 2 times in .* \(lines 1, 3\)/);
  const none = await ws.call({
    command: "str_replace",
    path: "f.txt",
    old_str: "delta",
    new_str: "x",
  });
  assert.equal(none.isError, true);
  assert.match(textOf(none), /does not occur verbatim/);
  const once = await ws.call({
    command: "str_replace",
    path: "f.txt",
    old_str: "beta\n",
    new_str: "BETA\nmore\n",
  });
  assert.equal(once.isError, undefined, textOf(once));
  assert.ok(
    textOf(once).includes(
      "Lines 1-5 now read:\n     1\talpha\n     2\tBETA\n     3\tmore",
    ),
  );
  assert.equal(
    await Deno.readTextFile(`${ws.root}/f.txt`),
    "alpha\nBETA\nmore\nalpha\ngamma\n",
  );
  const removed = await ws.call({
    command: "str_replace",
    path: "f.txt",
    old_str: "more\n",
  });
  assert.equal(removed.isError, undefined);
  assert.equal(
    await Deno.readTextFile(`${ws.root}/f.txt`),
    "alpha\nBETA\nalpha\ngamma\n",
  );
});

Deno.test("EditTool inserts after a line, at the top and at the end", async () => {
  await using ws = await workspace();
  await Deno.writeTextFile(`${ws.root}/f.txt`, "a\nb\n");
  await ws.call({
    command: "insert",
    path: "f.txt",
    insert_line: 1,
    new_str: "after a",
  });
  await ws.call({
    command: "insert",
    path: "f.txt",
    insert_line: 0,
    new_str: "top\n",
  });
  await ws.call({
    command: "insert",
    path: "f.txt",
    insert_line: 4,
    insert_text: "end",
  });
  assert.equal(
    await Deno.readTextFile(`${ws.root}/f.txt`),
    "top\na\nafter a\nb\nend\n",
  );
  const beyond = await ws.call({
    command: "insert",
    path: "f.txt",
    insert_line: 9,
    new_str: "x",
  });
  assert.equal(beyond.isError, true);
  assert.match(textOf(beyond), /insert_line must be from 0 to 5/);
});

Deno.test("EditTool undo_edit reverts edits one by one, and a creation by removing the file", async () => {
  await using ws = await workspace();
  await ws.call({ command: "create", path: "u.txt", file_text: "v1\n" });
  await ws.call({
    command: "str_replace",
    path: "u.txt",
    old_str: "v1",
    new_str: "v2",
  });
  await ws.call({
    command: "insert",
    path: "u.txt",
    insert_line: 1,
    new_str: "v3",
  });
  assert.equal(await Deno.readTextFile(`${ws.root}/u.txt`), "v2\nv3\n");
  await ws.call({ command: "undo_edit", path: "u.txt" });
  assert.equal(await Deno.readTextFile(`${ws.root}/u.txt`), "v2\n");
  await ws.call({ command: "undo_edit", path: "u.txt" });
  assert.equal(await Deno.readTextFile(`${ws.root}/u.txt`), "v1\n");
  const gone = await ws.call({ command: "undo_edit", path: "u.txt" });
  assert.match(textOf(gone), /the file is removed/);
  await assert.rejects(
    () => Deno.stat(`${ws.root}/u.txt`),
    Deno.errors.NotFound,
  );
  const nothing = await ws.call({ command: "undo_edit", path: "u.txt" });
  assert.equal(nothing.isError, true);
  assert.match(textOf(nothing), /No edit to undo/);
});

Deno.test("EditTool refuses paths outside the root: absolute, .., and through symlinks", async () => {
  await using ws = await workspace();
  await Deno.writeTextFile(`${ws.base}/outside.txt`, "private");
  await Deno.mkdir(`${ws.base}/elsewhere`);
  await Deno.symlink(`${ws.base}/outside.txt`, `${ws.root}/link.txt`);
  await Deno.symlink(`${ws.base}/elsewhere`, `${ws.root}/linkdir`);
  await Deno.symlink(`${ws.base}/missing.txt`, `${ws.root}/dangling.txt`);
  const attempts: EditInput[] = [
    { command: "view", path: "/etc/passwd" },
    { command: "view", path: "../outside.txt" },
    { command: "view", path: `${ws.root}/../outside.txt` },
    { command: "view", path: "sub/../../outside.txt" },
    { command: "view", path: "link.txt" },
    {
      command: "str_replace",
      path: "link.txt",
      old_str: "private",
      new_str: "owned",
    },
    { command: "create", path: "linkdir/new.txt", file_text: "escaped" },
    { command: "create", path: "linkdir/deeper/new.txt", file_text: "escaped" },
    { command: "view", path: "linkdir" },
    { command: "create", path: `${ws.base}/root-sibling.txt`, file_text: "x" },
    { command: "create", path: `${ws.root}x/y.txt`, file_text: "x" },
  ];
  for (const attempt of attempts) {
    const result = await ws.call(attempt);
    assert.equal(result.isError, true, JSON.stringify(attempt));
    assert.match(
      textOf(result),
      /is outside the root/,
      JSON.stringify(attempt),
    );
  }
  const dangling = await ws.call({
    command: "create",
    path: "dangling.txt",
    file_text: "x",
  });
  assert.equal(dangling.isError, true);
  assert.match(
    textOf(dangling),
    /is outside the root|symlink whose target is missing/,
  );
  assert.equal(await Deno.readTextFile(`${ws.base}/outside.txt`), "private");
  await assert.rejects(() => Deno.stat(`${ws.base}/elsewhere/new.txt`));
  await assert.rejects(() => Deno.stat(`${ws.base}/missing.txt`));
  await assert.rejects(() => Deno.stat(`${ws.root}x`));
});

Deno.test("EditTool follows a symlink that stays inside the root", async () => {
  await using ws = await workspace();
  await Deno.writeTextFile(`${ws.root}/real.txt`, "inside\n");
  await Deno.symlink(`${ws.root}/real.txt`, `${ws.root}/alias.txt`);
  const view = await ws.call({ command: "view", path: "alias.txt" });
  assert.equal(view.isError, undefined, textOf(view));
  assert.match(textOf(view), /1\tinside/);
});

Deno.test("EditTool enforces its size limits and refuses binary files", async () => {
  await using ws = await workspace({ maxFileBytes: 100, maxOutputChars: 60 });
  await Deno.writeTextFile(`${ws.root}/big.txt`, "x".repeat(101));
  const big = await ws.call({ command: "view", path: "big.txt" });
  assert.equal(big.isError, true);
  assert.match(
    textOf(big),
    /is 101 bytes; this tool reads files up to 100 bytes/,
  );
  const tooLarge = await ws.call({
    command: "create",
    path: "new.txt",
    file_text: "y".repeat(101),
  });
  assert.equal(tooLarge.isError, true);
  assert.match(textOf(tooLarge), /writes files up to 100 bytes/);
  await Deno.writeTextFile(`${ws.root}/lines.txt`, "line\n".repeat(19));
  const capped = textOf(await ws.call({ command: "view", path: "lines.txt" }));
  assert.match(
    capped,
    /\[… \d+ more characters not shown: view a smaller view_range …\]$/,
  );
  await Deno.writeFile(`${ws.root}/blob.bin`, new Uint8Array([0x89, 0, 1, 2]));
  const binary = await ws.call({ command: "view", path: "blob.bin" });
  assert.equal(binary.isError, true);
  assert.match(textOf(binary), /is not a UTF-8 text file/);
});

Deno.test("EditTool names missing arguments and files in one line", async () => {
  await using ws = await workspace();
  const cases: [EditInput, RegExp][] = [
    [{ command: "create", path: "a.txt" }, /create needs file_text/],
    [{ command: "view", path: "nope.txt" }, /does not exist/],
    [
      { command: "str_replace", path: "nope.txt", old_str: "a" },
      /does not exist/,
    ],
    [
      { command: "insert", path: "nope.txt", new_str: "a" },
      /insert needs insert_line/,
    ],
    [{ command: "view", path: "" }, /Invalid path/],
    [{ command: "view", path: "a\0b" }, /Invalid path/],
  ];
  for (const [input, message] of cases) {
    const result = await ws.call(input);
    assert.equal(result.isError, true, JSON.stringify(input));
    assert.match(textOf(result), message);
    assert.ok(!textOf(result).includes("\n"));
  }
});

Deno.test("EditTool refuses FIFOs, sockets and devices without reading them, and never hangs on a FIFO", async () => {
  await using ws = await workspace();
  const fifo = await new Deno.Command("mkfifo", { args: [`${ws.root}/pipe`] })
    .output();
  assert.ok(fifo.success, "mkfifo");
  const listener = Deno.listen({
    transport: "unix",
    path: `${ws.root}/sock`,
  });
  try {
    const started = performance.now();
    for (
      const input of [
        { command: "view", path: "pipe" },
        { command: "str_replace", path: "pipe", old_str: "a", new_str: "b" },
        { command: "insert", path: "pipe", insert_line: 0, new_str: "x" },
        { command: "view", path: "sock" },
      ] as EditInput[]
    ) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const result = await Promise.race([
        ws.call(input),
        new Promise<never>((_, reject) =>
          timer = setTimeout(
            () => reject(new Error(`${input.command} hung on ${input.path}`)),
            5_000,
          )
        ),
      ]).finally(() => clearTimeout(timer));
      assert.equal(result.isError, true, JSON.stringify(input));
      assert.match(
        textOf(result),
        /is a (FIFO|socket): edit reads and writes regular files only/,
      );
    }
    assert.ok(performance.now() - started < 2_000, "no open blocked");
    // A device node inside the root (only root may make one).
    const node = await new Deno.Command("mknod", {
      args: [`${ws.root}/zero`, "c", "1", "5"],
      stderr: "null",
    }).output();
    if (node.success) {
      const device = await ws.call({ command: "view", path: "zero" });
      assert.match(textOf(device), /is a device/);
    } else console.log("edit device test: mknod not permitted, skipped");
  } finally {
    listener.close();
  }
});

Deno.test("EditTool never leaves the root while a concurrent process swaps a directory for a symlink out of it (2,000 attempts)", async () => {
  await using ws = await workspace();
  const outside = `${ws.base}/outside`;
  await Deno.mkdir(outside);
  await Deno.writeTextFile(`${outside}/file.txt`, "SECRET\n");
  // sub alternates between a real directory and a symlink out of the root.
  const swapper = new Deno.Command("bash", {
    args: [
      "-c",
      'cd "$1"; while :; do mkdir sub; echo inside > sub/file.txt; rm -rf sub; ln -s ../outside sub; rm -f sub; done',
      "swapper",
      ws.root,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let read = 0;
  let leaked = 0;
  try {
    for (let i = 0; i < 1_000; i++) {
      const view = await ws.call({ command: "view", path: "sub/file.txt" });
      if (/inside/.test(textOf(view))) read++;
      if (/SECRET/.test(textOf(view))) leaked++;
      await ws.call({
        command: "create",
        path: `sub/new-${i}.txt`,
        file_text: "x",
      });
    }
  } finally {
    swapper.kill("SIGKILL");
    await swapper.status;
  }
  const written =
    [...Deno.readDirSync(outside)].filter((e) => e.name.startsWith("new-"))
      .length;
  console.log(
    `edit under a swapper: ${read} of 1000 views read the inside file, ${leaked} read outside; ${written} of 1000 creates wrote outside`,
  );
  assert.equal(leaked, 0, "views that read outside the root");
  assert.equal(written, 0, "creates that wrote outside the root");
});
