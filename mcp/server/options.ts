/**
 * The options of `new MCPServer(...)`, and the settings they come to with
 * their defaults filled in (the harness token read from the environment
 * among them).
 *
 * @module
 */
import type { Implementation, McpServerOptions } from "../_sdk.ts";
import { harnessTokenFromEnvironment } from "../harness.ts";

/** Options of the `MCPServer` constructor; the rest goes to the SDK. */
export interface MCPServerOptions extends McpServerOptions {
  /** Server name used in the MCP handshake. */
  name: string;
  /** Server version; defaults to `0.1.0`. */
  version?: string;
  /** Human-readable title of the server. */
  title?: string;
  /**
   * How long a SIGTERM stop may take before the process exits anyway (ms,
   * default 10 000): calls already running get up to half of it to answer,
   * the shutdown hooks the rest.
   */
  shutdownTimeoutMs?: number;
  /**
   * When set (default `MCP_HARNESS_TOKEN`), the dispatchers of the hubs named
   * in `harnessHubs` answer only requests whose `_meta.harness_token` equals
   * it, so an agent on the same connection cannot set up or score its own run.
   */
  harnessToken?: string;
  /** The hubs only the harness may call when `harnessToken` is set; default `["setup", "evaluate"]`. */
  harnessHubs?: readonly string[];
}

/** What a server is built with: its options, defaults filled in. */
export interface ServerSettings {
  /** Name, version and title, sent in the handshake. */
  info: Implementation;
  /** The SDK's options, with tools, resources, prompts and logging declared. */
  sdkOptions: McpServerOptions;
  /** How long a SIGTERM stop may take (ms). */
  shutdownTimeoutMs: number;
  /** The harness token; unset: every hub answers everyone. */
  harnessToken: string | undefined;
  /** The hubs only the harness may call. */
  harnessHubs: ReadonlySet<string>;
}

/**
 * Fills in the defaults. Tools, resources, prompts and logging are declared
 * as capabilities up front, so every protocol instance gets their handlers
 * and registering after a client connected works.
 *
 * @param options The constructor's options.
 * @returns The settings.
 */
export function serverSettings(options: MCPServerOptions): ServerSettings {
  const {
    name,
    version = "0.1.0",
    title,
    shutdownTimeoutMs = 10_000,
    harnessToken = harnessTokenFromEnvironment(),
    harnessHubs = ["setup", "evaluate"],
    ...rest
  } = options;
  return {
    info: { name, version, ...(title && { title }) },
    sdkOptions: {
      ...rest,
      capabilities: {
        tools: {},
        resources: {},
        prompts: {},
        logging: {},
        ...rest.capabilities,
      },
    },
    shutdownTimeoutMs,
    harnessToken: harnessToken || undefined,
    harnessHubs: new Set(harnessHubs),
  };
}
