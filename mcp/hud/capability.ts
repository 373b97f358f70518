/**
 * Capabilities: the live connections a HUD v6 harness drives itself,
 * published in `hello`'s `bindings` as `{name, protocol, url, params}` and
 * reached through the control port with `tunnel.open`. The factories follow
 * HUD's defaults (names `tools`, `browser`, `screen`; protocols
 * `mcp/2025-11-25`, `cdp/1.3`, `rfb/3.8`).
 *
 * @module
 */
import { z } from "zod";

/** One capability binding, as `hello` lists it. */
export interface Capability {
  /** What the harness names it in `tunnel.open` (`tools`, `browser`, `screen`). */
  name: string;
  /** Wire protocol id: `mcp/2025-11-25`, `cdp/1.3`, `rfb/3.8`, `ssh/2`. */
  protocol: string;
  /** Where the daemon listens, inside the environment (loopback). */
  url: string;
  /** Protocol-specific parameters. */
  params: Record<string, unknown>;
}

/** The zod schema of a binding as a client reads it from `hello`. */
export const CapabilitySchema: z.ZodType<Capability> = z.object({
  name: z.string().min(1).max(200),
  protocol: z.string().min(1).max(200),
  url: z.string().min(1).max(2048),
  params: z.record(z.string(), z.unknown()).nullish().transform((v) => v ?? {}),
});

/**
 * The `mcp` capability: tools over MCP's Streamable HTTP at `url` (`…/mcp`).
 *
 * @example
 * ```ts
 * import { mcpCapability } from "./capability.ts";
 *
 * const binding = mcpCapability("http://127.0.0.1:8765/mcp");
 * binding.name; // "tools"
 * binding.protocol; // "mcp/2025-11-25"
 * ```
 *
 * @param url The Streamable HTTP endpoint.
 * @param name The capability's name (default `tools`).
 * @returns The binding.
 */
export function mcpCapability(url: string, name = "tools"): Capability {
  return {
    name,
    protocol: "mcp/2025-11-25",
    url,
    params: { transport: "streamable-http" },
  };
}

/**
 * The `cdp` capability: a browser's DevTools endpoint (`http://127.0.0.1:9222`).
 *
 * @example Chromium started with `--remote-debugging-port=9222`
 * ```ts
 * import { cdpCapability } from "./capability.ts";
 *
 * const browser = cdpCapability("http://127.0.0.1:9222");
 * console.log(browser.protocol); // "cdp/1.3"
 * ```
 *
 * @param url The DevTools HTTP/WebSocket address.
 * @param name The capability's name (default `browser`).
 * @returns The binding.
 */
export function cdpCapability(url: string, name = "browser"): Capability {
  return { name, protocol: "cdp/1.3", url, params: {} };
}

/**
 * The `rfb` capability: a VNC server (x11vnc on an Xvfb display).
 *
 * @example x11vnc on display :1, port 5901
 * ```ts
 * import { rfbCapability } from "./capability.ts";
 *
 * const screen = rfbCapability("rfb://127.0.0.1:5901", { display: 1 });
 * console.log(screen.params); // { display: 1 }
 * ```
 *
 * @param url `rfb://host:port`.
 * @param options The display number, a VNC password, the name (default `screen`).
 * @returns The binding.
 */
export function rfbCapability(
  url: string,
  options: { display?: number; password?: string; name?: string } = {},
): Capability {
  return {
    name: options.name ?? "screen",
    protocol: "rfb/3.8",
    url,
    params: {
      display: options.display ?? 0,
      ...(options.password !== undefined && { password: options.password }),
    },
  };
}

/**
 * The binding `tunnel.open` names: by name, else by protocol family (`mcp`,
 * `cdp`, `rfb`) when exactly one binding speaks it.
 *
 * @param bindings The published bindings.
 * @param name What the client asked for.
 * @returns The binding, or `undefined`.
 */
export function findCapability(
  bindings: readonly Capability[],
  name: string,
): Capability | undefined {
  const byName = bindings.find((binding) => binding.name === name);
  if (byName) return byName;
  const byFamily = bindings.filter((binding) =>
    binding.protocol.split("/", 1)[0] === name
  );
  return byFamily.length === 1 ? byFamily[0] : undefined;
}

const DEFAULT_PORTS: Record<string, number> = {
  http: 80,
  https: 443,
  ws: 80,
  wss: 443,
};

/**
 * The host and port a binding's daemon listens on.
 *
 * @param binding The binding.
 * @returns Host and port, or `undefined` when its URL has no port.
 */
export function capabilityAddress(
  binding: Capability,
): { hostname: string; port: number } | undefined {
  const url = URL.parse(binding.url);
  if (!url || !url.hostname) return undefined;
  const port = url.port !== ""
    ? Number(url.port)
    : DEFAULT_PORTS[url.protocol.slice(0, -1)];
  if (port === undefined) return undefined;
  return { hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
}
