/**
 * Files under a root opened without a window between check and use:
 * every path is resolved by the kernel with `openat2(2)` and
 * `RESOLVE_BENEATH` relative to a descriptor of the root, so a directory
 * swapped for a symlink out of the root mid-call fails the open (`EXDEV`)
 * instead of reaching outside. The file is then used through
 * `/proc/self/fd/<n>`, which names the very inode opened, and its type
 * read from that inode: FIFOs, devices and sockets are refused before a
 * byte is read. Deno has no `openat2`, so this is the one place the tools
 * reach libc through FFI (Linux 5.6 or later, `--allow-ffi`).
 *
 * @module
 */

const O_WRONLY = 0o1;
const O_CREAT = 0o100;
const O_EXCL = 0o200;
const O_NONBLOCK = 0o4000;
const O_DIRECTORY = 0o200000;
const O_CLOEXEC = 0o2000000;
const O_PATH = 0o10000000;
const RESOLVE_NO_MAGICLINKS = 0x02;
const RESOLVE_BENEATH = 0x08;
const SYS_OPENAT2 = 437n;
const ENOENT = 2;
const EEXIST = 17;
const EXDEV = 18;
const ELOOP = 40;

const SYMBOLS = {
  syscall: {
    parameters: ["i64", "i64", "buffer", "buffer", "usize"],
    result: "i64",
  },
  open: { parameters: ["buffer", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  mkdirat: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  unlinkat: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let libc: Libc | undefined;

/** A path the kernel refused to resolve beneath the root, or a file of the wrong kind. */
export class BeneathError extends Error {
  /** Why: `outside` (it leaves the root), `missing`, or `kind` (not a file or directory). */
  readonly reason: "outside" | "missing" | "kind";

  /**
   * Creates the error.
   *
   * @param reason Why.
   * @param message One line.
   */
  constructor(reason: "outside" | "missing" | "kind", message: string) {
    super(message);
    this.name = "BeneathError";
    this.reason = reason;
  }
}

function cString(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`${text}\0`);
}

function errno(c: Libc): number {
  return new Deno.UnsafePointerView(c.__errno_location()!).getInt32();
}

/**
 * A root directory opened once, under which every path is opened by the
 * kernel beneath it.
 */
export class Beneath {
  readonly #c: Libc;
  readonly #root: number;

  private constructor(c: Libc, root: number) {
    this.#c = c;
    this.#root = root;
  }

  /**
   * Opens the root.
   *
   * @param root The directory.
   * @returns The handle.
   * @throws {Error} When FFI is not allowed, libc or `openat2` is missing,
   * or the root cannot be opened (one line saying which).
   */
  static open(root: string): Beneath {
    if (Deno.build.os !== "linux") {
      throw new Error("edit needs Linux (openat2) to open files safely");
    }
    try {
      libc ??= Deno.dlopen("libc.so.6", SYMBOLS).symbols;
    } catch (error) {
      throw new Error(
        `edit cannot open files without a check/use race here: ${
          (error as Error).message.split("\n")[0]
        } (it needs --allow-ffi and glibc)`,
      );
    }
    const fd = libc.open(cString(root), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      throw new Error(`Cannot open the root "${root}" (errno ${errno(libc)})`);
    }
    const beneath = new Beneath(libc, fd);
    // A kernel or seccomp profile without openat2 answers ENOSYS.
    const probe = beneath.#openat2(".", O_PATH | O_DIRECTORY);
    if (probe < 0) {
      const code = errno(libc);
      libc.close(fd);
      throw new Error(
        `edit cannot open files without a check/use race here: openat2 failed (errno ${code}; it needs Linux 5.6 and a seccomp profile that allows it)`,
      );
    }
    libc.close(probe);
    return beneath;
  }

  #openat2(rel: string, flags: number, mode = 0): number {
    const how = new BigUint64Array([
      BigInt(flags | O_CLOEXEC),
      BigInt(mode),
      BigInt(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS),
    ]);
    return Number(
      this.#c.syscall(
        SYS_OPENAT2,
        BigInt(this.#root),
        cString(rel === "" ? "." : rel),
        new Uint8Array(how.buffer),
        BigInt(how.byteLength),
      ),
    );
  }

  /** Opens `rel` (O_PATH unless told), throwing a {@linkcode BeneathError}. */
  #open(rel: string, flags = O_PATH, mode = 0): number {
    const fd = this.#openat2(rel, flags, mode);
    if (fd >= 0) return fd;
    const code = errno(this.#c);
    if (code === ENOENT) {
      throw new BeneathError("missing", `"${rel}" does not exist`);
    }
    if (code === EXDEV || code === ELOOP) {
      throw new BeneathError(
        "outside",
        `"${rel}" leaves the root (through "..", an absolute symlink or a symlink out of it)`,
      );
    }
    if (code === EEXIST) {
      // O_EXCL never follows a symlink: a dangling one is not created through.
      throw new BeneathError(
        "kind",
        `"${rel}" already exists, as a file or as a symlink whose target is missing: create makes new files only`,
      );
    }
    throw new Error(`Cannot open "${rel}" (errno ${code})`);
  }

  /** Runs `use` with `rel` open and its inode's info; the descriptor is closed after. */
  async #with<T>(
    fd: number,
    use: (proc: string, info: Deno.FileInfo) => Promise<T>,
  ): Promise<T> {
    try {
      const proc = `/proc/self/fd/${fd}`;
      return await use(proc, await Deno.stat(proc));
    } finally {
      this.#c.close(fd);
    }
  }

  /**
   * What is at `rel`, if anything.
   *
   * @param rel A path relative to the root.
   * @returns Its info (symlinks beneath the root followed), or `undefined`.
   * @throws {BeneathError} When the path leaves the root.
   */
  async stat(rel: string): Promise<Deno.FileInfo | undefined> {
    let fd: number;
    try {
      fd = this.#open(rel);
    } catch (error) {
      if (error instanceof BeneathError && error.reason === "missing") {
        return undefined;
      }
      throw error;
    }
    return await this.#with(fd, (_proc, info) => Promise.resolve(info));
  }

  /**
   * Reads a regular file, at most `maxBytes` of it.
   *
   * @param rel A path relative to the root.
   * @param maxBytes The largest file read.
   * @returns Its bytes.
   * @throws {BeneathError} When it leaves the root, is missing, or is not a
   * regular file (a FIFO, device or socket is refused without reading).
   * @throws {RangeError} When it is larger than `maxBytes`.
   */
  async read(rel: string, maxBytes: number): Promise<Uint8Array> {
    return await this.#with(this.#open(rel), async (proc, info) => {
      if (!info.isFile) throw notRegular(rel, info);
      if (info.size > maxBytes) {
        throw new RangeError(`"${rel}" is ${info.size} bytes`);
      }
      using file = await Deno.open(proc, { read: true });
      const bytes = new Uint8Array(info.size + 1);
      let filled = 0;
      for (;;) {
        const n = await file.read(bytes.subarray(filled));
        if (n === null || n === 0) break;
        filled += n;
        // Grown since the stat: no more than the limit is ever held.
        if (filled > maxBytes) {
          throw new RangeError(`"${rel}" is over ${maxBytes} bytes`);
        }
        if (filled === bytes.length) break;
      }
      return bytes.subarray(0, filled);
    });
  }

  /**
   * Writes a regular file beneath the root, making its missing parent
   * directories there; `createNew` refuses one that exists.
   *
   * @param rel A path relative to the root.
   * @param bytes The content.
   * @param createNew Whether the file must not exist yet.
   * @throws {BeneathError} When it leaves the root, exists (with
   * `createNew`), or is not a regular file.
   */
  async write(rel: string, bytes: Uint8Array, createNew: boolean) {
    const slash = rel.lastIndexOf("/");
    if (slash > 0) this.#mkdirs(rel.slice(0, slash));
    const fd = createNew
      ? this.#open(rel, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK, 0o644)
      : this.#open(rel);
    await this.#with(fd, async (proc, info) => {
      if (!info.isFile) throw notRegular(rel, info);
      using file = await Deno.open(proc, { write: true });
      await file.truncate(0);
      let offset = 0;
      while (offset < bytes.length) {
        offset += await file.write(bytes.subarray(offset));
      }
    });
  }

  /**
   * The entries of a directory.
   *
   * @param rel A path relative to the root ("" for the root).
   * @returns Its entries (symlinks not followed).
   * @throws {BeneathError} When it leaves the root or is not a directory.
   */
  async list(rel: string): Promise<Deno.DirEntry[]> {
    return await this.#with(
      this.#open(rel, O_PATH | O_DIRECTORY),
      async (proc) => {
        const entries: Deno.DirEntry[] = [];
        for await (const entry of Deno.readDir(proc)) entries.push(entry);
        return entries;
      },
    );
  }

  /**
   * Removes a file (the name itself, never what a symlink points to).
   *
   * @param rel A path relative to the root.
   */
  remove(rel: string): void {
    const slash = rel.lastIndexOf("/");
    const parent = slash > 0 ? rel.slice(0, slash) : "";
    const fd = this.#open(parent, O_PATH | O_DIRECTORY);
    try {
      if (this.#c.unlinkat(fd, cString(rel.slice(slash + 1)), 0) < 0) {
        throw new Error(`Cannot remove "${rel}" (errno ${errno(this.#c)})`);
      }
    } finally {
      this.#c.close(fd);
    }
  }

  /** Makes each missing directory of `rel`, each one beneath its parent. */
  #mkdirs(rel: string): void {
    const parts = rel.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join("/");
      try {
        this.#c.close(this.#open(prefix, O_PATH | O_DIRECTORY));
        continue;
      } catch (error) {
        if (!(error instanceof BeneathError) || error.reason !== "missing") {
          throw error;
        }
      }
      const parent = this.#open(
        parts.slice(0, i - 1).join("/"),
        O_PATH | O_DIRECTORY,
      );
      try {
        // mkdirat never follows its last component: a symlink planted
        // there fails it (EEXIST), and the next open checks it.
        if (
          this.#c.mkdirat(parent, cString(parts[i - 1]), 0o755) < 0 &&
          errno(this.#c) !== EEXIST
        ) {
          throw new Error(
            `Cannot make the directory "${prefix}" (errno ${errno(this.#c)})`,
          );
        }
      } finally {
        this.#c.close(parent);
      }
    }
  }

  /** Closes the root. */
  close(): void {
    this.#c.close(this.#root);
  }
}

function notRegular(rel: string, info: Deno.FileInfo): BeneathError {
  const kind = info.isDirectory
    ? "a directory"
    : info.isFifo
    ? "a FIFO"
    : info.isSocket
    ? "a socket"
    : info.isCharDevice || info.isBlockDevice
    ? "a device"
    : "not a regular file";
  return new BeneathError(
    "kind",
    `"${rel}" is ${kind}: edit reads and writes regular files only`,
  );
}
