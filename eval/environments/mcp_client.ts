/**
 * The MCP client of an environment reached over stdio or HTTP: the SDK v2
 * client on a transport whose reads are bounded (`../_bounded_read.ts`,
 * `../_bounded_http.ts`), the display size in the `_meta` of its
 * `initialize`, a stdio child's variables and the end of its stderr, and the
 * one line that says why it did not start.
 *
 * @module
 */
import {
  Client,
  type JSONRPCMessage,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { boundStdio } from "../_bounded_read.ts";
import { boundedFetch } from "../_bounded_http.ts";
import { DEFAULT_DISPLAY, type DisplaySize } from "../tool_host.ts";
import type { ConnectOptions } from "./contract.ts";
import {
  EnvironmentError,
  type EnvironmentTarget,
  OutputTail,
  settledTail,
  startFailure,
} from "./target.ts";

/** An MCP client connected to an environment, its name, and its stderr's end. */
export interface ConnectedClient {
  /** The SDK v2 client. */
  client: Client;
  /** The environment's name (its server name). */
  name: string;
  /** The end of a stdio environment's stderr (empty over HTTP). */
  stderr: OutputTail;
}

/**
 * Connects an MCP client. Over HTTP the client probes for the 2026-07-28
 * revision and falls back to the handshake; over stdio it opens with the
 * handshake (the SDK's stdio probe would spawn a second process per
 * connection). A stdio child gets the harness token as `MCP_HARNESS_TOKEN`
 * and `options.env`, beside the variables the SDK passes.
 *
 * @example
 * ```ts
 * import { connectClient } from "./mcp_client.ts";
 *
 * const { client, name } = await connectClient({ url: "http://127.0.0.1:8765/mcp" }, {});
 * console.log(name);
 * await client.close();
 * ```
 *
 * @param target A URL, or a command to run.
 * @param options Harness token, child variables, display size.
 * @returns The client, the environment's name and its stderr's end.
 * @throws {EnvironmentError} When it cannot be reached or started, or does
 * not say its name: the message says why, with the end of its stderr.
 */
export async function connectClient(
  target: Exclude<EnvironmentTarget, { tcp: string } | { runtime: unknown }>,
  options: ConnectOptions,
): Promise<ConnectedClient> {
  const info = { name: "mcpkit-eval", version: "0.1.0" };
  const display = displayMeta(options.display ?? DEFAULT_DISPLAY);
  const stderr = new OutputTail();
  let client: Client;
  let transport: Transport;
  if ("url" in target) {
    client = new Client(info, { versionNegotiation: { mode: "auto" } });
    transport = new StreamableHTTPClientTransport(new URL(target.url), {
      fetch: boundedFetch(),
    });
  } else {
    client = new Client(info);
    const stdio = new StdioClientTransport({
      command: target.command,
      args: target.args,
      cwd: target.cwd,
      env: {
        ...options.env,
        ...(options.harnessToken &&
          { MCP_HARNESS_TOKEN: options.harnessToken }),
      },
      stderr: "pipe",
    });
    stdio.stderr?.on("data", (chunk: Uint8Array) => stderr.push(chunk));
    transport = boundStdio(stdio);
  }
  try {
    await client.connect(withInitializeMeta(transport, display));
  } catch (error) {
    await client.close().catch(() => {});
    throw new EnvironmentError(
      startFailure(target, error, await settledTail(stderr)),
      { cause: error },
    );
  }
  const name = client.getServerVersion()?.name;
  if (!name) {
    await client.close();
    throw new EnvironmentError("The environment did not say its name");
  }
  return { client, name, stderr };
}

/**
 * The `_meta` every request carries: the display size.
 *
 * @example
 * ```ts
 * import { displayMeta } from "./mcp_client.ts";
 *
 * displayMeta({ width: 1280, height: 800 }); // { display_width: 1280, display_height: 800 }
 * ```
 *
 * @param display The screen size the agent sees.
 * @returns Its `_meta` fields.
 */
export function displayMeta(display: DisplaySize): Record<string, unknown> {
  return { display_width: display.width, display_height: display.height };
}

/**
 * Adds `_meta` to the `initialize` request a transport sends: the SDK's
 * client builds that request itself and takes no `_meta` for it.
 */
function withInitializeMeta<T extends Transport>(
  transport: T,
  meta: Record<string, unknown>,
): T {
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options) => {
    if ("method" in message && message.method === "initialize") {
      const params = (message.params ?? {}) as Record<string, unknown>;
      const own = (params._meta ?? {}) as Record<string, unknown>;
      message = {
        ...message,
        params: { ...params, _meta: { ...own, ...meta } },
      };
    }
    return send(message, options);
  };
  return transport;
}
