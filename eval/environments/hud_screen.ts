/**
 * The `computer` tool the runner plays itself on a HUD environment's `rfb`
 * screen, when the environment publishes a screen but no `computer` tool:
 * our RFB client (`mcp/hud/rfb.ts`, `rfb_executor.ts`) through a
 * `tunnel.open`, so the native computer-use agents drive the screen. A
 * screen that does not answer is cut off at the tool time limit and dropped,
 * so the next call connects again.
 *
 * @module
 */
import { z } from "zod";
import type { Capability } from "../../mcp/hud/capability.ts";
import { type ControlAddress, openTunnel } from "../../mcp/hud/tunnel.ts";
import { shapeToJsonSchema } from "../../mcp/primitives/_schema.ts";
import { RfbClient } from "../../mcp/hud/rfb.ts";
import { RfbExecutor } from "../../mcp/hud/rfb_executor.ts";
import { ComputerTool } from "../../tools/computer.ts";
import {
  type AgentTool,
  capToolContent,
  DEFAULT_DISPLAY,
  DEFAULT_MAX_TOOL_RESULT_BYTES,
  DEFAULT_MAX_TOOL_RESULT_IMAGES,
  type DisplaySize,
  type ToolResult,
} from "../tool_host.ts";
import { type ConnectOptions, DEFAULT_TOOL_TIMEOUT_MS } from "./contract.ts";
import { EnvironmentError } from "./target.ts";
import { closeQuietly, TimeLimitError, withTimeLimit } from "./time_limit.ts";

/**
 * The runner's `computer` tool on a HUD environment's `rfb` screen, opened
 * when first offered.
 *
 * @example
 * ```ts
 * import { HudScreen } from "./hud_screen.ts";
 * import { parseControlAddress } from "../../mcp/hud/tunnel.ts";
 *
 * const screen = new HudScreen(parseControlAddress("tcp://127.0.0.1:7000"), {});
 * const bindings = [
 *   { name: "screen", protocol: "rfb/3.8", url: "tcp://127.0.0.1:5900", params: {} },
 * ];
 * const tools = await screen.offer([], bindings); // [{ name: "computer", … }]
 * if (screen.plays("computer")) await screen.call({ action: "screenshot" });
 * await screen.close();
 * ```
 */
export class HudScreen {
  readonly #address: ControlAddress;
  readonly #limits: { maxBytes: number; maxImages: number };
  /** How long one call of the runner's own `computer` tool may take, ms (as any tool's). */
  readonly #toolTimeoutMs: number;
  /** Sent with each `tunnel.open` (a server with a token opens tunnels only for it). */
  readonly #harnessToken: string | undefined;
  /** The screen size the agent was told (the runner's `computer` tool plays in it). */
  readonly #display: DisplaySize;
  /** The `computer` tool the runner plays on the `rfb` screen, once offered. */
  #screen: Promise<{ tool: ComputerTool; rfb: RfbClient }> | undefined;

  /**
   * Creates the screen's player; nothing is opened until it is offered.
   *
   * @param address The environment's control channel (tunnels go through it).
   * @param options Harness token, display size, tool time-out and limits.
   */
  constructor(address: ControlAddress, options: ConnectOptions) {
    this.#address = address;
    this.#limits = {
      maxBytes: options.maxToolResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES,
      maxImages: options.maxToolResultImages ??
        DEFAULT_MAX_TOOL_RESULT_IMAGES,
    };
    this.#toolTimeoutMs = options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    this.#harnessToken = options.harnessToken;
    this.#display = options.display ?? DEFAULT_DISPLAY;
  }

  /**
   * The `mcp` capability's tools; and, when the environment publishes an
   * `rfb` screen but no `computer` tool, a `computer` tool the runner plays
   * on that screen itself (our RFB client through a tunnel), so the native
   * computer-use agents drive it.
   *
   * @param tools The tools the `mcp` capability lists.
   * @param bindings The capabilities the environment published.
   * @returns Them, with the runner's `computer` tool when it plays one.
   */
  async offer(
    tools: AgentTool[],
    bindings: readonly Capability[],
  ): Promise<AgentTool[]> {
    const screen = bindings.find((b) => b.protocol.startsWith("rfb/"));
    if (!screen || tools.some((tool) => tool.name === "computer")) {
      return tools;
    }
    this.#screen ??= this.#open(screen.name);
    const { tool } = await this.#screen;
    return [...tools, {
      name: tool.name,
      description: tool.description,
      inputSchema: shapeToJsonSchema(tool.input),
    }];
  }

  async #open(
    capability: string,
  ): Promise<{ tool: ComputerTool; rfb: RfbClient }> {
    let rfb: RfbClient;
    let conn: Deno.Conn | undefined;
    const limit = this.#toolTimeoutMs;
    try {
      // A screen that never finishes its handshake is cut off at the
      // tool time limit, as a tool that does not answer is.
      rfb = await withTimeLimit(
        (async () => {
          const tunnel = await openTunnel(
            this.#address,
            capability,
            limit,
            this.#harnessToken,
          );
          conn = tunnel.conn;
          return await RfbClient.connect(tunnel.conn, tunnel.early);
        })(),
        limit,
        () => closeQuietly(conn),
        `it did not answer within ${limit / 1000} s`,
      );
    } catch (error) {
      this.#screen = undefined;
      throw new EnvironmentError(
        `Cannot reach the screen "${capability}": ${(error as Error).message}`,
        { cause: error },
      );
    }
    const tool = new ComputerTool({ executor: new RfbExecutor(rfb) });
    tool.configure({
      display_width: this.#display.width,
      display_height: this.#display.height,
    });
    return { tool, rfb };
  }

  /**
   * Whether a tool is the runner's own `computer` tool on the `rfb` screen
   * ({@linkcode HudScreen.call} runs it), not one of the `mcp` capability's.
   *
   * @param name The tool's name.
   * @returns `true` once the runner offered its `computer` tool.
   */
  plays(name: string): boolean {
    return name === "computer" && this.#screen !== undefined;
  }

  /**
   * Calls the runner's own `computer` tool on the `rfb` screen: arguments
   * checked, cut off at the tool time limit, its result capped.
   *
   * @param args The tool's arguments.
   * @param signal Ends the call early.
   * @returns The result's text and images, and whether it is an error.
   * @throws {EnvironmentError} When the screen does not answer in time or
   * fails.
   */
  async call(
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    const screen = this.#screen;
    if (!screen) throw new EnvironmentError("The screen was never offered");
    const { tool } = await screen;
    const parsed = z.object(tool.input).safeParse(args);
    if (!parsed.success) {
      return {
        text: `Error: ${parsed.error.issues.map((i) => i.message).join("; ")}`,
        images: [],
        isError: true,
      };
    }
    let result;
    const limit = this.#toolTimeoutMs;
    // A screen that stops answering is dropped (the next call connects
    // again) and the call fails as a tool past its time limit does.
    const drop = () => {
      if (this.#screen === screen) this.#screen = undefined;
      screen.then(({ rfb }) => rfb.close(), () => {});
    };
    try {
      result = await withTimeLimit(
        tool.call(parsed.data),
        limit,
        drop,
        `The tool "computer" did not answer within ${limit / 1000} s`,
        signal,
      );
    } catch (error) {
      if (signal?.aborted) throw error;
      if (error instanceof TimeLimitError) {
        throw new EnvironmentError(error.message, { cause: error });
      }
      drop();
      throw new EnvironmentError(
        `The screen failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return {
      ...capToolContent(
        result.content as unknown as Record<string, unknown>[],
        this.#limits,
      ),
      isError: result.isError === true,
    };
  }

  /** Closes the screen's RFB connection, if one was opened. */
  async close(): Promise<void> {
    if (this.#screen) (await this.#screen.catch(() => undefined))?.rfb.close();
  }
}
