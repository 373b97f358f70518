/**
 * The harness token: with `MCP_HARNESS_TOKEN` set, the setup and evaluate
 * hub dispatchers answer only requests whose `_meta.harness_token` equals it,
 * so an agent under evaluation, on the same connection, cannot set up or
 * score its own run.
 *
 * @module
 */
import type { CallToolResult } from "./_sdk.ts";

/**
 * Whether a request may use a harness-only tool.
 *
 * @param token The harness token; unset: everyone may.
 * @param extra The SDK's request context, whose `_meta` carries `harness_token`.
 * @returns `true` when no token is set or the request carries it.
 */
export function harnessAllowed(
  token: string | undefined,
  extra: { _meta?: Record<string, unknown> },
): boolean {
  if (!token) return true;
  const presented = extra._meta?.harness_token;
  if (typeof presented !== "string") return false;
  return constantTimeEqual(presented, token);
}

/**
 * The result a harness-only tool gives anyone else.
 *
 * @param hub The hub's name.
 * @returns An `isError` tool result that says what is required.
 */
export function harnessRefusal(hub: string): CallToolResult {
  return {
    isError: true,
    content: [{
      type: "text",
      text:
        `The "${hub}" hub answers only the evaluation harness: send _meta.harness_token`,
    }],
  };
}

const encoder = new TextEncoder();

/**
 * Compares two strings in time that depends on the expected one's length
 * only, not on where they differ. (No `node:crypto`: loading it cost a stdio
 * environment 15 ms of cold start.)
 */
export function constantTimeEqual(
  presented: string,
  expected: string,
): boolean {
  const a = encoder.encode(presented);
  const b = encoder.encode(expected);
  let difference = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) difference |= (a[i] ?? 0) ^ b[i];
  return difference === 0;
}

let environmentToken: { value: string | undefined } | undefined;

/**
 * `MCP_HARNESS_TOKEN`, read once per process and then taken out of it: out
 * of `Deno.env`, so processes the environment starts later (a browser, a
 * shell, a tool's helper) do not inherit it, and out of the process's own
 * `/proc/<pid>/environ`, which `Deno.env.delete` leaves as it was and any
 * process of the same user can read (the original strings are overwritten in
 * place through `/proc/self/mem`). Where either is not allowed the token
 * stays there: see {@linkcode environmentTokenScrubbed}.
 *
 * @returns The token, or `undefined` when unset.
 * @example
 * ```ts
 * import { harnessTokenFromEnvironment } from "./harness.ts";
 * const token = harnessTokenFromEnvironment();
 * // Deno.env.get("MCP_HARNESS_TOKEN") is now undefined, and so is the token
 * // in /proc/<pid>/environ, but `token` keeps it.
 * ```
 */
export function harnessTokenFromEnvironment(): string | undefined {
  if (environmentToken) return environmentToken.value;
  let value: string | undefined;
  try {
    value = Deno.env.get(HARNESS_TOKEN_VARIABLE) || undefined;
    Deno.env.delete(HARNESS_TOKEN_VARIABLE);
  } catch {
    // no --allow-env: nothing was read, nothing to take out
  }
  environmentToken = { value };
  if (value !== undefined) scrubbed = scrubProcEnviron(HARNESS_TOKEN_VARIABLE);
  return value;
}

const HARNESS_TOKEN_VARIABLE = "MCP_HARNESS_TOKEN";
let scrubbed = false;

/**
 * Whether the token read by {@linkcode harnessTokenFromEnvironment} was
 * taken out of `/proc/<pid>/environ`.
 *
 * @returns `true` once it was overwritten there.
 */
export function environmentTokenScrubbed(): boolean {
  return scrubbed;
}

/**
 * Overwrites `NAME=value` in the process's original environment block (what
 * `/proc/<pid>/environ` shows) with NUL bytes.
 */
function scrubProcEnviron(name: string): boolean {
  try {
    const stat = Deno.readTextFileSync("/proc/self/stat");
    // Fields after "(comm)": the 3rd field of the line is index 0 here;
    // env_start and env_end are the 50th and 51st fields (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = Number(fields[47]);
    const end = Number(fields[48]);
    if (!(start > 0 && end > start && end - start < 1 << 24)) return false;
    using mem = Deno.openSync("/proc/self/mem", { read: true, write: true });
    const block = new Uint8Array(end - start);
    mem.seekSync(start, Deno.SeekMode.Start);
    let filled = 0;
    while (filled < block.length) {
      const n = mem.readSync(block.subarray(filled));
      if (n === null || n === 0) break;
      filled += n;
    }
    const prefix = new TextEncoder().encode(`${name}=`);
    let found = false;
    for (let at = 0; at < filled; at = block.indexOf(0, at) + 1 || filled) {
      if (!prefix.every((byte, i) => block[at + i] === byte)) continue;
      const stop = block.indexOf(0, at);
      const zeros = new Uint8Array((stop < 0 ? filled : stop) - at);
      mem.seekSync(start + at, Deno.SeekMode.Start);
      let written = 0;
      while (written < zeros.length) {
        written += mem.writeSync(zeros.subarray(written));
      }
      found = true;
    }
    return found;
  } catch {
    return false;
  }
}
