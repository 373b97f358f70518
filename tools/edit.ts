/**
 * The `edit` tool: view, create and change text files under one root
 * directory, with undo. Its input is Anthropic's text editor tool's
 * (`view`, `create`, `str_replace`, `insert`, `undo_edit`), so an agent's
 * native editor maps onto it one to one.
 *
 * @module
 */
import { isAbsolute, relative, resolve, sep } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { BaseTool } from "../mcp/mod.ts";
import {
  EDIT_INPUT,
  type EditInput,
  type EditInputShape,
} from "./edit_input.ts";
import { Beneath, BeneathError } from "./_beneath.ts";

/** Options of {@linkcode EditTool}. */
export interface EditToolOptions {
  /** The directory every path must stay inside (the kernel resolves each beneath it). */
  root: string;
  /** Tool name (default `edit`). */
  name?: string;
  /** The largest file it reads or writes (bytes, default 5 000 000). */
  maxFileBytes?: number;
  /** The most characters a `view` answers with (default 30 000). */
  maxOutputChars?: number;
  /** Edits kept for undo, per file (default 10). */
  historyDepth?: number;
}

/** A refusal: answered as `isError` with its message. */
class EditError extends Error {}

const SNIPPET_LINES = 4;
const MAX_LISTED = 1_000;

function numbered(lines: string[], first: number): string {
  return lines.map((line, i) => `${String(first + i).padStart(6)}\t${line}`)
    .join("\n");
}

function splitLines(content: string): { lines: string[]; trailing: boolean } {
  if (content === "") return { lines: [], trailing: false };
  const lines = content.split("\n");
  const trailing = content.endsWith("\n");
  if (trailing) lines.pop();
  return { lines, trailing };
}

function within(path: string, root: string): boolean {
  return path === root ||
    path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * The `edit` tool: `view` a file (numbered lines, optional `view_range`) or a
 * directory (two levels, hidden entries left out); `create` a new file;
 * `str_replace` text that occurs exactly once; `insert` after a line;
 * `undo_edit` the last change to a file. Every path must stay inside the
 * root; the kernel opens each file beneath it (`openat2`, no window between
 * check and use), and FIFOs, sockets and devices are refused; others are
 * refused with one line. Needs Linux 5.6+ and `--allow-ffi`.
 *
 * @example
 * ```ts
 * import { EditTool } from "./edit.ts";
 * const root = await Deno.makeTempDir();
 * const edit = new EditTool({ root });
 * await edit.call({ command: "create", path: "notes.txt", file_text: "one\ntwo\n" });
 * await edit.call({ command: "str_replace", path: "notes.txt", old_str: "two", new_str: "2" });
 * await Deno.readTextFile(`${root}/notes.txt`); // "one\n2\n"
 * ```
 */
export class EditTool extends BaseTool<EditInputShape> {
  /** What the tool does, for the agent. */
  override description: string =
    "View, create and edit text files. view shows a file with line numbers " +
    "(view_range [first, last] for part of it) or lists a directory; create makes " +
    "a new file; str_replace replaces old_str, which must occur exactly once; " +
    "insert adds text after line insert_line (0: at the top); undo_edit reverts " +
    "the last change to a file.";
  /** The input shape: the command and its arguments. */
  override input: EditInputShape = EDIT_INPUT;
  /** The directory paths are confined to, as given. */
  readonly root: string;
  readonly #maxFileBytes: number;
  readonly #maxOutputChars: number;
  readonly #historyDepth: number;
  readonly #history = new Map<string, (string | null)[]>();
  #realRoot: string | undefined;
  #beneath: Beneath | undefined;

  /**
   * Creates the tool.
   *
   * @param options The root, and optionally name and limits.
   */
  constructor(options: EditToolOptions) {
    super();
    this.name = options.name ?? "edit";
    this.root = resolve(options.root);
    this.#maxFileBytes = options.maxFileBytes ?? 5_000_000;
    this.#maxOutputChars = options.maxOutputChars ?? 30_000;
    this.#historyDepth = options.historyDepth ?? 10;
  }

  /**
   * Runs one command.
   *
   * @param input The command and its arguments.
   * @returns What was done, or `isError` with one line.
   */
  async call(input: EditInput): Promise<CallToolResult> {
    try {
      return { content: [{ type: "text", text: await this.#run(input) }] };
    } catch (error) {
      if (
        error instanceof EditError || error instanceof Deno.errors.NotFound ||
        error instanceof Deno.errors.PermissionDenied ||
        error instanceof Deno.errors.IsADirectory
      ) {
        return {
          content: [{ type: "text", text: error.message }],
          isError: true,
        };
      }
      throw error;
    }
  }

  async #run(input: EditInput): Promise<string> {
    const path = await this.#resolve(input.path);
    switch (input.command) {
      case "view":
        return await this.#view(path, input.view_range);
      case "create":
        return await this.#create(path, input.file_text);
      case "str_replace":
        return await this.#replace(path, input.old_str, input.new_str ?? "");
      case "insert":
        return await this.#insert(
          path,
          input.insert_line,
          input.new_str ?? input.insert_text,
        );
      case "undo_edit":
        return await this.#undo(path);
    }
  }

  /**
   * The absolute path for `path`, refused unless it stays inside the root
   * as written (`..` resolved); symlinks are followed by the kernel, beneath
   * the root only, when the file is opened.
   */
  async #resolve(path: string): Promise<string> {
    if (path.trim() === "" || path.includes("\0")) {
      throw new EditError(`Invalid path ${JSON.stringify(path)}`);
    }
    this.#realRoot ??= await Deno.realPath(this.root).catch(() => {
      throw new EditError(`The root "${this.root}" does not exist`);
    });
    const realRoot = this.#realRoot;
    const absolute = resolve(this.root, path);
    const candidates = [absolute];
    if (isAbsolute(path) && !within(absolute, this.root)) {
      // An absolute path through the root's real location is fine too.
      candidates.push(resolve(path));
    }
    const lexical = candidates.find((p) =>
      within(p, this.root) || within(p, realRoot)
    );
    if (!lexical) throw this.#outside(path);
    // Symlinks are the kernel's to follow, beneath the root, when the file
    // is opened (`_beneath.ts`): checked here they could be swapped before use.
    return lexical;
  }

  /** The root's descriptor, opened on first use. */
  #root(): Beneath {
    try {
      return this.#beneath ??= Beneath.open(this.root);
    } catch (error) {
      throw new EditError((error as Error).message);
    }
  }

  /**
   * Runs one file operation on `path` beneath the root, its refusals as one
   * line naming the path.
   */
  async #io<T>(
    path: string,
    use: (beneath: Beneath, rel: string) => Promise<T> | T,
  ): Promise<T> {
    const base = within(path, this.root) ? this.root : this.#realRoot!;
    const rel = relative(base, path).split(sep).join("/");
    try {
      return await use(this.#root(), rel);
    } catch (error) {
      if (!(error instanceof BeneathError)) throw error;
      if (error.reason === "outside") {
        // The kernel refuses absolute symlinks beneath a root even when they
        // point inside it: their real path, when inside, is tried once more,
        // again beneath the root (a swap in between fails that open too).
        const real = await Deno.realPath(path).catch(() => undefined);
        if (real && within(real, this.#realRoot!) && real !== path) {
          return await this.#io(real, use);
        }
        throw this.#outside(path);
      }
      if (error.reason === "missing") {
        throw new EditError(`The path "${path}" does not exist`);
      }
      throw new EditError(error.message.replace(`"${rel}"`, `"${path}"`));
    }
  }

  #outside(path: string): EditError {
    return new EditError(
      `Path "${path}" is outside the root "${this.root}": only files under it can be viewed or edited`,
    );
  }

  async #readText(path: string): Promise<string> {
    const info = await this.#io(path, (root, rel) => root.stat(rel));
    if (!info) throw new EditError(`The path "${path}" does not exist`);
    if (info.isDirectory) {
      throw new EditError(
        `"${path}" is a directory: only view works on directories`,
      );
    }
    if (info.size > this.#maxFileBytes) {
      throw new EditError(
        `"${path}" is ${info.size} bytes; this tool reads files up to ${this.#maxFileBytes} bytes (use bash for larger ones)`,
      );
    }
    const bytes = await this.#io(
      path,
      (root, rel) =>
        root.read(rel, this.#maxFileBytes).catch((error) => {
          if (!(error instanceof RangeError)) throw error;
          throw new EditError(
            `"${path}" is over ${this.#maxFileBytes} bytes; this tool reads files up to ${this.#maxFileBytes} bytes (use bash for larger ones)`,
          );
        }),
    );
    try {
      if (bytes.subarray(0, 8192).includes(0)) throw new TypeError("NUL");
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw new EditError(`"${path}" is not a UTF-8 text file`);
    }
  }

  async #write(path: string, content: string, previous: string | null) {
    const size = new TextEncoder().encode(content).length;
    if (size > this.#maxFileBytes) {
      throw new EditError(
        `The new content is ${size} bytes; this tool writes files up to ${this.#maxFileBytes} bytes`,
      );
    }
    const bytes = new TextEncoder().encode(content);
    await this.#io(
      path,
      (root, rel) => root.write(rel, bytes, previous === null),
    );
    const history = this.#history.get(path) ?? [];
    history.push(previous);
    if (history.length > this.#historyDepth) history.shift();
    this.#history.set(path, history);
  }

  #cap(text: string): string {
    if (text.length <= this.#maxOutputChars) return text;
    return `${text.slice(0, this.#maxOutputChars)}\n[… ${
      text.length - this.#maxOutputChars
    } more characters not shown: view a smaller view_range …]`;
  }

  async #view(path: string, range: number[] | undefined): Promise<string> {
    const info = await this.#io(path, (root, rel) => root.stat(rel));
    if (!info) throw new EditError(`The path "${path}" does not exist`);
    if (info.isDirectory) {
      if (range) {
        throw new EditError("view_range works on files, not directories");
      }
      const entries = await this.#list(path);
      return this.#cap(
        `Files and directories up to 2 levels deep in ${path}, hidden ones left out:\n${
          entries.join("\n")
        }`,
      );
    }
    const { lines } = splitLines(await this.#readText(path));
    let first = 1;
    let last = lines.length;
    if (range) {
      if (range.length !== 2) {
        throw new EditError("view_range must be two numbers: [first, last]");
      }
      [first, last] = range;
      if (last === -1) last = lines.length;
      if (first < 1 || first > Math.max(1, lines.length)) {
        throw new EditError(
          `view_range starts at ${first}, but the file has ${lines.length} lines`,
        );
      }
      if (last < first || last > lines.length) {
        throw new EditError(
          `view_range ends at ${
            range[1]
          }: expected -1 or a line from ${first} to ${lines.length}`,
        );
      }
    }
    return this.#cap(
      `Here is ${path} with line numbers:\n${
        numbered(lines.slice(first - 1, last), first)
      }`,
    );
  }

  async #list(dir: string): Promise<string[]> {
    const found: string[] = [dir];
    const walk = async (path: string, depth: number) => {
      const entries: Deno.DirEntry[] = [];
      const listed = await this.#io(path, (root, rel) => root.list(rel));
      for (const entry of listed) {
        if (!entry.name.startsWith(".")) entries.push(entry);
      }
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        if (found.length > MAX_LISTED) return;
        const child = `${path}${sep}${entry.name}`;
        found.push(entry.isDirectory ? `${child}${sep}` : child);
        if (entry.isDirectory && depth < 2) await walk(child, depth + 1);
      }
    };
    await walk(dir, 1);
    if (found.length > MAX_LISTED) {
      found.splice(MAX_LISTED);
      found.push(`[… more entries not listed: view a subdirectory …]`);
    }
    return found;
  }

  async #create(path: string, text: string | undefined): Promise<string> {
    if (text === undefined) throw new EditError(`create needs file_text`);
    if (await this.#io(path, (root, rel) => root.stat(rel))) {
      throw new EditError(
        `"${path}" already exists: create makes new files only (use str_replace, or undo_edit)`,
      );
    }
    await this.#write(path, text, null);
    return `Created ${path}`;
  }

  async #replace(
    path: string,
    oldText: string | undefined,
    newText: string,
  ): Promise<string> {
    if (oldText === undefined || oldText === "") {
      throw new EditError("str_replace needs old_str, the text to replace");
    }
    const content = await this.#readText(path);
    const at = content.indexOf(oldText);
    if (at === -1) {
      throw new EditError(
        `No replacement was made: old_str does not occur verbatim in ${path}`,
      );
    }
    if (content.indexOf(oldText, at + 1) !== -1) {
      const lines: number[] = [];
      for (let i = at; i !== -1; i = content.indexOf(oldText, i + 1)) {
        lines.push(content.slice(0, i).split("\n").length);
      }
      throw new EditError(
        `No replacement was made: old_str occurs ${lines.length} times in ${path} (lines ${
          lines.join(", ")
        }); make it unique`,
      );
    }
    const updated = content.slice(0, at) + newText +
      content.slice(at + oldText.length);
    await this.#write(path, updated, content);
    const startLine = content.slice(0, at).split("\n").length;
    const endLine = startLine + newText.split("\n").length - 1;
    return `Edited ${path}. ${this.#snippet(updated, startLine, endLine)}`;
  }

  #snippet(content: string, startLine: number, endLine: number): string {
    const { lines } = splitLines(content);
    const first = Math.max(1, startLine - SNIPPET_LINES);
    const last = Math.min(lines.length, endLine + SNIPPET_LINES);
    return this.#cap(
      `Lines ${first}-${last} now read:\n${
        numbered(lines.slice(first - 1, last), first)
      }`,
    );
  }

  async #insert(
    path: string,
    line: number | undefined,
    text: string | undefined,
  ): Promise<string> {
    if (line === undefined) throw new EditError("insert needs insert_line");
    if (text === undefined) {
      throw new EditError(
        "insert needs new_str (or insert_text), the text to insert",
      );
    }
    const content = await this.#readText(path);
    const { lines, trailing } = splitLines(content);
    if (line < 0 || line > lines.length) {
      throw new EditError(
        `insert_line must be from 0 to ${lines.length} (the file's line count), got ${line}`,
      );
    }
    const inserted = splitLines(text.endsWith("\n") ? text : text + "\n").lines;
    const result = [
      ...lines.slice(0, line),
      ...inserted,
      ...lines.slice(line),
    ];
    const updated = result.join("\n") +
      (trailing || content === "" ? "\n" : "");
    await this.#write(path, updated, content);
    return `Inserted ${inserted.length} line(s) after line ${line} of ${path}. ${
      this.#snippet(updated, line + 1, line + inserted.length)
    }`;
  }

  async #undo(path: string): Promise<string> {
    const history = this.#history.get(path);
    const previous = history?.pop();
    if (previous === undefined) {
      throw new EditError(`No edit to undo for ${path}`);
    }
    if (previous === null) {
      await this.#io(path, (root, rel) => root.remove(rel));
      return `Undid the creation of ${path}: the file is removed`;
    }
    const bytes = new TextEncoder().encode(previous);
    await this.#io(path, (root, rel) => root.write(rel, bytes, false));
    return `Undid the last edit of ${path}`;
  }
}
