/**
 * The display size the harness asks for over HUD v6. Over MCP the agent's
 * screen size arrives in the `initialize` request's `_meta`
 * (`display_width`, `display_height`) and an initialize hook hands it to
 * the `computer` tool. On the control channel the hooks run before the
 * port is bound, with no request, so the size comes later: in `hello`'s
 * params, or in the `_meta` of a request over the `mcp` capability. Each
 * tool that takes a size (a `configure(meta)` method, as `ComputerTool`
 * has) is handed it then, before the task's setup reads it.
 *
 * @module
 */

/** The display keys: the agent's screen width and height in pixels. */
export interface DisplayRequest {
  /** Width in pixels (an integer from 1 to 8192). */
  display_width?: unknown;
  /** Height in pixels (an integer from 1 to 8192). */
  display_height?: unknown;
}

/** A tool that takes the agent's display size (`ComputerTool.configure`). */
export interface DisplayTool {
  /**
   * Takes the size.
   *
   * @param meta The display keys.
   * @throws {RangeError} When a value is out of range.
   */
  configure(meta: DisplayRequest | undefined): void;
}

/**
 * Whether a tool takes the display size.
 *
 * @param tool Any tool.
 * @returns Whether it has `configure(meta)`.
 */
export function isDisplayTool(tool: unknown): tool is DisplayTool {
  return typeof tool === "object" && tool !== null &&
    typeof (tool as { configure?: unknown }).configure === "function";
}

/**
 * The display keys of a `_meta` or `hello` params object, when it has one.
 *
 * @param source The object.
 * @returns The keys, or `undefined` when neither is there.
 */
export function displayRequest(source: unknown): DisplayRequest | undefined {
  if (typeof source !== "object" || source === null) return undefined;
  const { display_width, display_height } = source as DisplayRequest;
  if (display_width === undefined && display_height === undefined) {
    return undefined;
  }
  return { display_width, display_height };
}
