/**
 * The screen the agent sees: its size from the client's initialize `_meta`
 * (`display_width`, `display_height`; default 1920×1080), and the scaling of
 * coordinates between it and the real screen.
 *
 * @module
 */
import type { Region, Size } from "./executor.ts";

/**
 * The agent's screen when the client names none (the MCP description's fallback).
 *
 * @example
 * ```ts
 * import { agentSize, DEFAULT_AGENT_SIZE } from "./display.ts";
 *
 * DEFAULT_AGENT_SIZE; // { width: 1920, height: 1080 }
 * agentSize({}).width === DEFAULT_AGENT_SIZE.width; // true: no display_width sent
 * ```
 */
export const DEFAULT_AGENT_SIZE: Readonly<Size> = Object.freeze({
  width: 1920,
  height: 1080,
});

/** The largest screen side an agent may be told, pixels. */
const MAX_SIDE = 8192;

/** The agent-size keys of an initialize request's `_meta`. */
export interface DisplayMeta {
  /** The agent's screen width in pixels. */
  display_width?: unknown;
  /** The agent's screen height in pixels. */
  display_height?: unknown;
}

function sideFrom(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  const number = typeof value === "string" ? Number(value) : value;
  if (
    typeof number !== "number" || !Number.isInteger(number) || number < 1 ||
    number > MAX_SIDE
  ) {
    throw new RangeError(
      `Cannot use ${name} ${
        JSON.stringify(value)
      }: expected an integer from 1 to ${MAX_SIDE}`,
    );
  }
  return number;
}

/**
 * The agent's screen size from an initialize request's `_meta`: each of
 * `display_width` and `display_height` that is missing falls back to
 * 1920×1080's.
 *
 * @param meta The `_meta` (`ctx.meta` of an initialize hook), possibly absent.
 * @returns The size.
 * @throws {RangeError} When a value is not an integer from 1 to 8192.
 * @example
 * ```ts
 * import { agentSize } from "./display.ts";
 * agentSize({ display_width: 1280, display_height: 800 }); // { width: 1280, height: 800 }
 * agentSize(undefined); // { width: 1920, height: 1080 }
 * ```
 */
export function agentSize(meta: DisplayMeta | undefined): Size {
  return {
    width: sideFrom(
      meta?.display_width,
      "display_width",
      DEFAULT_AGENT_SIZE.width,
    ),
    height: sideFrom(
      meta?.display_height,
      "display_height",
      DEFAULT_AGENT_SIZE.height,
    ),
  };
}

/**
 * Maps a coordinate between two sizes of the same screen, pixel centre to
 * pixel centre, so every pixel of one lands inside the other.
 *
 * @param value The coordinate in `from` pixels.
 * @param from The side's length it is measured in.
 * @param to The side's length to convert to.
 * @returns The coordinate in `to` pixels, from 0 to `to - 1`.
 * @example
 * ```ts
 * import { scaleCoordinate } from "./display.ts";
 * scaleCoordinate(640, 1280, 1920); // 960
 * scaleCoordinate(1279, 1280, 1920); // 1919
 * ```
 */
export function scaleCoordinate(
  value: number,
  from: number,
  to: number,
): number {
  const scaled = Math.floor((value + 0.5) * to / from);
  return Math.min(to - 1, Math.max(0, scaled));
}

/** What a `zoom` shows: its region on both screens, and the picture's size. */
export interface ZoomArea {
  /** The region in agent pixels. */
  agent: Region;
  /** The real screen's region it covers. */
  real: Region;
  /** The picture: the region's shape enlarged to fit the agent's screen. */
  size: Size;
}

/**
 * A `zoom` region `[x1, y1, x2, y2]` in agent pixels as the real screen's
 * region it covers (edges rounded outwards, so nothing asked for is cut),
 * and the size of the picture: the region enlarged, keeping its shape, to
 * fit the agent's screen.
 *
 * @param corners The region's top-left and bottom-right corners, agent pixels.
 * @param agent The agent's screen size.
 * @param real The real screen's size.
 * @returns The regions and the picture's size.
 * @throws {RangeError} When the region is missing, empty, or not inside the screen.
 * @example
 * ```ts
 * import { zoomArea } from "./display.ts";
 * const area = zoomArea([0, 0, 640, 200], { width: 1280, height: 800 }, { width: 2560, height: 1600 });
 * area.real; // { x: 0, y: 0, width: 1280, height: 400 }
 * area.size; // { width: 1280, height: 400 }
 * ```
 */
export function zoomArea(
  corners: readonly number[] | undefined,
  agent: Size,
  real: Size,
): ZoomArea {
  if (!corners || corners.length !== 4) {
    throw new RangeError(
      'Action "zoom" needs region [x1, y1, x2, y2] in pixels of the screen',
    );
  }
  const [x1, y1, x2, y2] = corners.map(Math.round);
  const { width, height } = agent;
  if (
    ![x1, y1, x2, y2].every(Number.isFinite) || x1 < 0 || y1 < 0 ||
    x2 > width || y2 > height || x2 <= x1 || y2 <= y1
  ) {
    throw new RangeError(
      `Zoom region [${
        corners.join(", ")
      }] must lie inside the ${width}x${height} screen, its first corner above and left of its second`,
    );
  }
  const left = Math.floor(x1 * real.width / width);
  const top = Math.floor(y1 * real.height / height);
  const right = Math.min(
    real.width,
    Math.max(left + 1, Math.ceil(x2 * real.width / width)),
  );
  const bottom = Math.min(
    real.height,
    Math.max(top + 1, Math.ceil(y2 * real.height / height)),
  );
  const scale = Math.min(width / (x2 - x1), height / (y2 - y1));
  return {
    agent: { x: x1, y: y1, width: x2 - x1, height: y2 - y1 },
    real: { x: left, y: top, width: right - left, height: bottom - top },
    size: {
      width: Math.max(1, Math.min(width, Math.round((x2 - x1) * scale))),
      height: Math.max(1, Math.min(height, Math.round((y2 - y1) * scale))),
    },
  };
}
