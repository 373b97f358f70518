/**
 * Initialize hooks: application setup that runs once per process, before the
 * first request that needs the server is answered: inside `initialize` for a
 * legacy client, before the first request other than `server/discover` for a
 * modern (2026-07-28) one.
 *
 * @module
 */
import type { Implementation, ProgressToken, ServerContext } from "../_sdk.ts";
import { redirectConsoleToStderr } from "../transports/console.ts";

/** The `_meta` of the request that runs the hooks: progress token, display size, any other key. */
export interface InitializeMeta {
  /** Token to report progress against; progress is sent only when present. */
  progressToken?: ProgressToken;
  /** Display width for computer-style tools (environments fall back to 1920). */
  display_width?: number;
  /** Display height for computer-style tools (environments fall back to 1080). */
  display_height?: number;
  /** Any other key the client sent. */
  [key: string]: unknown;
}

/** Parameters of an MCP progress notification. */
export interface ProgressParams {
  /** The token from the request's `_meta`. */
  progressToken: ProgressToken;
  /** Progress so far; increases with each notification. */
  progress: number;
  /** Total, when known. */
  total?: number;
  /** What is happening now. */
  message?: string;
}

/** The client session an initialize hook runs for. */
export interface InitializeSession {
  /**
   * Sends an MCP progress notification to the client that is initializing.
   *
   * @param params Token, progress, total and message.
   */
  sendProgressNotification(params: ProgressParams): Promise<void>;
}

/** What an initialize hook receives. */
export interface InitializeContext {
  /** The request's `_meta`, possibly absent. */
  meta?: InitializeMeta;
  /** The session, for progress notifications. */
  session: InitializeSession;
  /**
   * Reports progress out of 100 against the request's token; does nothing without one.
   *
   * @param progress Progress out of 100.
   * @param message What is happening now.
   */
  progress(progress: number, message?: string): Promise<void>;
  /** Name and version of the client (from `initialize`, or a modern request's `_meta`), when it sent them. */
  clientInfo?: Implementation;
  /** Aborted when the request is cancelled or the connection closes. */
  signal: AbortSignal;
}

/** A function run once per process, before the first request is answered. */
export type InitializeHook = (ctx: InitializeContext) => void | Promise<void>;

const CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo";

/**
 * Builds the hook context for the request that runs the hooks: a legacy
 * `initialize` (its `_meta` and `clientInfo`) or any modern request (its
 * `_meta`, and the client info from its envelope).
 */
export function initializeContext(
  request: { params?: { _meta?: unknown; clientInfo?: Implementation } },
  ctx: ServerContext,
): InitializeContext {
  const meta = (ctx.mcpReq._meta ?? request.params?._meta) as
    | InitializeMeta
    | undefined;
  const session: InitializeSession = {
    sendProgressNotification: (params) =>
      ctx.mcpReq.notify({
        method: "notifications/progress",
        params: { ...params },
      }),
  };
  const token = meta?.progressToken;
  return {
    meta,
    session,
    progress: async (progress, message) => {
      if (token === undefined) return;
      await session.sendProgressNotification({
        progressToken: token,
        progress,
        total: 100,
        message,
      });
    },
    clientInfo: request.params?.clientInfo ??
      (ctx.mcpReq.envelope as Record<string, unknown> | undefined)
        ?.[CLIENT_INFO_KEY] as Implementation | undefined,
    signal: ctx.mcpReq.signal,
  };
}

/**
 * The registered initialize hooks and whether they have run. Hooks run once
 * per process: a later client skips them, a client that arrives while they run
 * waits for them. A failed run does not count, so the next client retries.
 */
export class InitializeHooks {
  readonly #hooks: InitializeHook[] = [];
  #done = false;
  #running: Promise<void> | undefined;

  /** Adds a hook; hooks run in registration order. */
  add(hook: InitializeHook): void {
    this.#hooks.push(hook);
  }

  /** Hooks registered so far. */
  get hooks(): readonly InitializeHook[] {
    return this.#hooks;
  }

  /** Whether nothing is left to run: the hooks ran, or there are none. */
  get done(): boolean {
    return this.#done || this.#hooks.length === 0;
  }

  /**
   * Runs the hooks unless they already ran, with console output sent to
   * stderr. A failing hook sends progress "Initialization failed: …" (with a
   * token) and rethrows with the hook's message.
   */
  async run(ctx: InitializeContext): Promise<void> {
    while (!this.#done && this.#hooks.length > 0) {
      if (this.#running) {
        await this.#running.catch(() => {});
        continue;
      }
      this.#running = this.#runAll(ctx);
      try {
        await this.#running;
        this.#done = true;
      } finally {
        this.#running = undefined;
      }
    }
  }

  async #runAll(ctx: InitializeContext): Promise<void> {
    const restore = redirectConsoleToStderr();
    try {
      for (const hook of this.#hooks) await hook(ctx);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await ctx.progress(100, `Initialization failed: ${message}`).catch(
        () => {},
      );
      throw error instanceof Error ? error : new Error(message);
    } finally {
      restore();
    }
  }
}
