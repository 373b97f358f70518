// What the desktop suites share: whether the X programs and Chromium are
// installed (the suites skip, saying so, when not), and an SDK client
// transport that sends `_meta` with `initialize` (the display size).
import { pngSize } from "../tools/mod.ts";
import type { JSONRPCMessage } from "./_mcp_client.ts";

const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";

function installed(program: string): boolean {
  try {
    return new Deno.Command("which", {
      args: [program],
      stdout: "null",
      stderr: "null",
    }).outputSync().success;
  } catch {
    return false;
  }
}

/**
 * The programs a desktop test needs that are missing; logs one line naming
 * them (and the suite) when any is.
 */
export function missingDesktopPrograms(suite: string): string[] {
  const missing = ["Xvfb", "xdotool", "import", "setsid", CHROMIUM].filter(
    (program) => !installed(program),
  );
  if (missing.length > 0) {
    console.log(
      `${suite}: skipped, ${
        missing.join(", ")
      } not installed (apt-get install xvfb xdotool imagemagick chromium)`,
    );
  }
  return missing;
}

/** Adds `_meta` to the `initialize` request a client sends through `transport`. */
export function sendInitializeMeta<
  T extends { send(message: JSONRPCMessage): Promise<void> },
>(
  transport: T,
  meta: Record<string, unknown> | undefined,
): T {
  if (!meta) return transport;
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage) => {
    if ("method" in message && message.method === "initialize") {
      message = {
        ...message,
        params: { ...message.params, _meta: meta },
      } as JSONRPCMessage;
    }
    return send(message);
  };
  return transport;
}

/** Whether a process runs (a zombie waiting to be reaped counts as gone). */
export function processRunning(pid: number): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/stat`).split(" ")[2] !== "Z";
  } catch {
    return false;
  }
}

/** The size of a base64 PNG. */
export function pngSizeOf(data: string): { width: number; height: number } {
  const bytes = Uint8Array.from(
    atob(data.slice(0, 64)),
    (c) => c.charCodeAt(0),
  );
  const size = pngSize(bytes);
  if (!size) throw new Error("Not a PNG");
  return size;
}
