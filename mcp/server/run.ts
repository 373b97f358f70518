/**
 * What `MCPServer.run()` does around the transport: its options, picking and
 * starting it with its settings from the options or the environment, serving
 * until it stops, and stopping it the way a container runtime expects
 * (SIGTERM: drain, hooks, exit 0; SIGINT: exit 130; a `deno run --watch`
 * reload: close, no hooks).
 *
 * @module
 */
import {
  type RunningTransport,
  type SessionHost,
  startStdio,
} from "../transports/stdio.ts";
import type { HudOptions, HudSource } from "../hud/serve.ts";
import {
  installSignalHandlers,
  ReloadDetector,
  runShutdownHooks,
  type ShutdownHook,
} from "./signals.ts";

const DEFAULT_PORT = 8765;
const DEFAULT_HOST = "127.0.0.1";
const DEFAULT_SESSION_IDLE_MS = 5 * 60_000;
const CLOSE_TIMEOUT_MS = 2_000;

/** The transports `run()` serves. */
export type TransportName = "stdio" | "http" | "sse" | "hud";

/** Options of `MCPServer.run()`. */
export interface RunOptions {
  /** `"stdio"` (default), `"http"` (Streamable HTTP at `/mcp`), `"sse"` (legacy SSE) or `"hud"` (HUD v6's control channel over TCP). */
  transport?: TransportName | (string & Record<never, never>);
  /** Port for http, sse and hud; default `MCP_PORT` or 8765; 0 picks a free port. */
  port?: number;
  /** Interface for http, sse and hud; default `MCP_HOST` or 127.0.0.1 (`0.0.0.0` in containers). */
  host?: string;
  /** Legacy sessions without a request for this long are closed (ms, default 5 min). */
  sessionIdleMs?: number;
  /** The most legacy sessions (Streamable HTTP's 2025-era sessions, SSE streams) open at once (default `MCP_MAX_SESSIONS` or 256); past it the session idle longest (a minute or more) is closed, or the new one refused with 503. */
  maxSessions?: number;
  /** The most legacy sessions one peer address holds (default `MCP_MAX_SESSIONS_PER_PEER` or 64); past it that peer's session idle a minute or more is closed, or the new one refused with 429 and `Retry-After`. */
  maxSessionsPerPeer?: number;
  /** Legacy sessions the harness (a request showing `MCP_HARNESS_TOKEN`) may open past `maxSessions` (default `MCP_HARNESS_RESERVE` or 32); it counts toward no peer. */
  harnessReserve?: number;
  /** When set (default `MCP_DEV_TOKEN`), `/dev` requires `Authorization: Bearer <token>`. */
  devToken?: string;
  /**
   * Streamable HTTP sessions keep their recent events, so a client on
   * protocol 2025-11-25 resumes a broken stream (or one a tool closed with
   * `extra.closeSSEStream()`) with `Last-Event-ID` (default false, as in the SDK).
   */
  resumable?: boolean;
  /**
   * Refuse every HTTP request a browser page sends (an `Origin` header), on
   * `/mcp` and `/dev` (default false; `MCP_REFUSE_BROWSERS=1`). Set it when
   * the agent drives a browser on the same host: a page it opens could
   * otherwise call the tools directly, those its scenario left out included.
   */
  refuseBrowsers?: boolean;
  /**
   * Browser origins that may call `/mcp` and `/dev` (CORS headers name
   * them), besides the server's own pages, e.g. the MCP Inspector's
   * `http://localhost:6274` (default none; `MCP_ALLOWED_ORIGINS`, comma
   * separated). Any other page gets 403, a loopback one included.
   */
  allowedOrigins?: readonly string[];
  /**
   * The HUD control port's limits (connections per peer and in total,
   * idle and frame time-outs, the frame budget); each has a documented
   * default.
   */
  hudLimits?: Omit<HudOptions, "port" | "host" | "onListen">;
  /** Stops the server when aborted. */
  signal?: AbortSignal;
  /** Called with the bound address once http, sse or hud listens. */
  onListen?: (addr: Deno.NetAddr) => void;
  /** Install SIGTERM/SIGINT handling (default true); embedders and tests may opt out. */
  handleSignals?: boolean;
}

/** A positive integer from an environment variable, or `undefined` when unset; anything else stops start-up with one line. */
function positiveInt(value: string | undefined, name: string) {
  if (value === undefined || value === "") return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new TypeError(
      `Invalid ${name} "${value}": expected a positive integer`,
    );
  }
  return number;
}

/** An environment variable, or `undefined` without one (or without `--allow-env`). */
export function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: fall back to the defaults
  }
}

/** A started transport; the control channel also says whether a call is being answered. */
export type StartedTransport = RunningTransport & { busy?(): boolean };

/**
 * Starts the transport `options` name with its settings: the options, else
 * `MCP_PORT`, `MCP_HOST`, `MCP_MAX_SESSIONS`, `MCP_MAX_SESSIONS_PER_PEER`,
 * `MCP_HARNESS_RESERVE`, `MCP_DEV_TOKEN`, else defaults.
 * The HTTP stack (Hono, sessions, `/dev`) is loaded only for http, sse and
 * hud (whose `mcp` capability is Streamable HTTP).
 *
 * @param host The server.
 * @param options `run()`'s options.
 * @param hud The server's tasks, capabilities and hooks, for `"hud"`.
 * @param harnessToken The harness token, let in past the session caps of http and sse.
 * @returns The running transport.
 * @throws {TypeError} For an unknown transport or a bad session cap variable.
 */
export async function startTransport(
  host: SessionHost,
  options: RunOptions,
  hud?: () => HudSource,
  harnessToken?: string,
): Promise<StartedTransport> {
  const transport = options.transport ?? "stdio";
  if (
    transport !== "stdio" && transport !== "http" && transport !== "sse" &&
    transport !== "hud"
  ) {
    throw new TypeError(
      `Unknown transport "${transport}": expected "stdio", "http", "sse" or "hud"`,
    );
  }
  if (transport === "stdio") return await startStdio(host);
  if (transport === "hud") {
    if (!hud) throw new TypeError("The hud transport needs the server's tasks");
    return (await import("../hud/serve.ts")).startHud(host, hud(), {
      ...options.hudLimits,
      port: options.port ?? Number(envVar("MCP_PORT") ?? DEFAULT_PORT),
      host: options.host ?? envVar("MCP_HOST") ?? DEFAULT_HOST,
      onListen: options.onListen,
    });
  }
  return (await import("../transports/http.ts")).startHttp(host, {
    transport: transport as "http" | "sse",
    port: options.port ?? Number(envVar("MCP_PORT") ?? DEFAULT_PORT),
    host: options.host ?? envVar("MCP_HOST") ?? DEFAULT_HOST,
    sessionIdleMs: options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    maxSessions: options.maxSessions ??
      positiveInt(envVar("MCP_MAX_SESSIONS"), "MCP_MAX_SESSIONS"),
    maxSessionsPerPeer: options.maxSessionsPerPeer ??
      positiveInt(
        envVar("MCP_MAX_SESSIONS_PER_PEER"),
        "MCP_MAX_SESSIONS_PER_PEER",
      ),
    harnessReserve: options.harnessReserve ??
      positiveInt(envVar("MCP_HARNESS_RESERVE"), "MCP_HARNESS_RESERVE"),
    harnessToken,
    devToken: options.devToken ?? (envVar("MCP_DEV_TOKEN") || undefined),
    resumable: options.resumable,
    refuseBrowsers: options.refuseBrowsers ??
      envVar("MCP_REFUSE_BROWSERS") === "1",
    allowedOrigins: options.allowedOrigins ??
      (envVar("MCP_ALLOWED_ORIGINS") ?? "").split(",").map((o) => o.trim())
        .filter((o) => o !== ""),
    onListen: options.onListen,
  });
}

/** What stopping needs from the server. */
export interface StopControl {
  /** The server's name, for the log line. */
  name: string;
  /** The whole SIGTERM budget, ms. */
  shutdownTimeoutMs: number;
  /** The hooks to run on SIGTERM. */
  shutdownHooks: readonly ShutdownHook[];
  /** Whether a request is still being handled. */
  busy(): boolean;
}

/**
 * Installs the stop handling. SIGTERM refuses new requests, lets running
 * calls answer (half the budget), runs the shutdown hooks once (the rest),
 * closes and exits 0; SIGINT closes and exits 130; a SIGTERM that is a
 * `deno run --watch` reload closes without the hooks.
 *
 * @param running The transport.
 * @param control The server's side of it.
 * @returns A function that removes the handling.
 */
export function handleStopSignals(
  running: RunningTransport,
  control: StopControl,
): () => void {
  const reloads = ReloadDetector.start();
  const remove = installSignalHandlers({
    terminate: async () => {
      if (reloads?.reloading()) {
        // `deno run --watch` restarting after an edit: free the port for the
        // new program; the shutdown hooks are for a real stop only.
        console.error(
          `MCP server "${control.name}": reloading, shutdown hooks skipped`,
        );
        await closeWithin(running, CLOSE_TIMEOUT_MS);
        return;
      }
      // Calls already running get up to half the budget to answer; the
      // hooks get the rest, so the whole stop fits in shutdownTimeoutMs.
      const started = Date.now();
      running.drain();
      const deadline = started + control.shutdownTimeoutMs / 2;
      while (Date.now() < deadline && control.busy()) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await runShutdownHooks(
        control.shutdownHooks,
        control.shutdownTimeoutMs - (Date.now() - started),
        control.shutdownTimeoutMs,
      );
      await closeWithin(running, CLOSE_TIMEOUT_MS);
      Deno.exit(0);
    },
    interrupt: async () => {
      await closeWithin(running, CLOSE_TIMEOUT_MS);
      Deno.exit(130);
    },
  });
  return () => {
    remove();
    reloads?.close();
  };
}

/**
 * Waits until a started transport finishes: until `options.signal` aborts,
 * the transport is closed, or a stop signal (unless `handleSignals` is false)
 * ends it; then removes the signal handling.
 *
 * @param running The started transport.
 * @param options `run()`'s options.
 * @param control The server's side of stopping; the transport's own calls count as busy too.
 * @returns Resolves when the transport has finished.
 */
export async function serveUntilStopped(
  running: StartedTransport,
  options: RunOptions,
  control: StopControl,
): Promise<void> {
  const removeSignals = options.handleSignals === false
    ? () => {}
    : handleStopSignals(running, {
      ...control,
      busy: () => running.busy?.() || control.busy(),
    });
  const abort = () => running.close();
  options.signal?.addEventListener("abort", abort, { once: true });
  if (options.signal?.aborted) await abort();
  try {
    await running.finished;
  } finally {
    options.signal?.removeEventListener("abort", abort);
    removeSignals();
  }
}

/** What a run needs from the server beside the session host. */
export interface RunControl extends StopControl {
  /** The server's tasks, capabilities and hooks, for `"hud"`. */
  hud(): HudSource;
  /** The harness token, let in past the session caps of http and sse. */
  harnessToken?: string;
}

/** A server's runs: one transport at a time, which `stop()` closes. */
export class ServerRun {
  #running: StartedTransport | undefined;

  /** Client sessions open on the running transport; 0 when not running. */
  get sessionCount(): number {
    return this.#running?.sessionCount() ?? 0;
  }

  /**
   * Starts the transport `options` name and serves until it stops
   * ({@linkcode startTransport}, then {@linkcode serveUntilStopped}).
   *
   * @param host The server.
   * @param options `run()`'s options.
   * @param control The server's side of running and stopping.
   * @returns Resolves when the transport has finished.
   * @throws {Error} When the server is running already.
   */
  async serve(
    host: SessionHost,
    options: RunOptions,
    control: RunControl,
  ): Promise<void> {
    if (this.#running) {
      throw new Error(`Server "${control.name}" is already running`);
    }
    const running = await startTransport(
      host,
      options,
      () => control.hud(),
      control.harnessToken,
    );
    this.#running = running;
    try {
      await serveUntilStopped(running, options, control);
    } finally {
      this.#running = undefined;
    }
  }

  /**
   * Closes the running transport, if any.
   *
   * @returns Resolves when it has closed.
   */
  async stop(): Promise<void> {
    await this.#running?.close();
  }
}

async function closeWithin(
  running: RunningTransport,
  ms: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    running.close().catch((error) =>
      console.error("Closing the transport failed:", error)
    ),
    new Promise((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}
