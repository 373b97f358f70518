/**
 * A HUD v6 environment opened by address, with its session in view: the
 * {@linkcode Environment} that `Environment.connect({ tcp })` gives, plus the
 * control session's id and the capability bindings its `hello` published.
 *
 * @module
 */
import type { Capability } from "../../mcp/hud/capability.ts";
import type { ConnectOptions } from "./contract.ts";
import { Environment } from "./environment.ts";
import { HudSession, type OpenedHudSession } from "./hud_session.ts";
import { OutputTail } from "./target.ts";

/**
 * A HUD v6 environment, driven by the runner: tasks on the control channel,
 * tools over the `mcp` capability.
 *
 * @example
 * ```ts
 * import { HudEnvironment } from "./hud_environment.ts";
 *
 * async function capabilities(address: string): Promise<string[]> {
 *   const env = await HudEnvironment.open(address);
 *   try {
 *     return env.bindings.map((binding) => binding.protocol);
 *   } finally {
 *     await env.close();
 *   }
 * }
 * ```
 */
export class HudEnvironment extends Environment {
  /** The control session's id (`hello`). */
  readonly sessionId: string;
  /** The capability bindings `hello` published. */
  readonly bindings: readonly Capability[];

  private constructor(
    opened: OpenedHudSession,
    options: ConnectOptions,
  ) {
    super(
      opened.client,
      opened.name,
      options,
      new OutputTail(),
      opened.session,
    );
    this.sessionId = opened.session.sessionId;
    this.bindings = opened.session.bindings;
  }

  /**
   * Connects: `hello` on the control channel, then an MCP client (SDK v2,
   * both eras) on the `mcp` capability through a loopback forwarder whose
   * every connection is a `tunnel.open` to it.
   *
   * @param address `tcp://host:port` or `host:port`.
   * @param options Harness token (sent in `hello`), display size, limits.
   * @returns The connected environment.
   * @throws {EnvironmentError} When the environment cannot be reached, its
   * `hello` is malformed, or it offers no `mcp` capability.
   */
  static async open(
    address: string,
    options: ConnectOptions = {},
  ): Promise<HudEnvironment> {
    return new HudEnvironment(await HudSession.open(address, options), options);
  }
}
