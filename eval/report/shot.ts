/**
 * A screenshot in the report: the action that produced it, a marker where a
 * click or a drag landed, and a click that enlarges it, with no script (a
 * `<details>` whose open state the stylesheet shows full-screen).
 *
 * The action is read from the tool call's arguments as the model sent them,
 * whatever the convention: the desktop tools' `computer` and Responses'
 * (`action`/`type`, `x`/`y`, a drag's `path`), Claude's (`coordinate`,
 * `start_coordinate`) and Gemini's (the function's name, `x`/`y` and
 * `destination_x`/`destination_y` on a 0–999 grid).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { esc, num } from "./html.ts";

/** A point on the screenshot, its pixels. */
interface Point {
  x: number;
  y: number;
}

/** What the report says of the action behind a screenshot. */
export interface ShotAction {
  /** The action, in a few words: `click at (412, 300)`. */
  label: string;
  /** Where the pointer went, in order (one for a click, two or more for a drag). */
  points: Point[];
  /** Whether the points are on Gemini's 0–999 grid rather than pixels. */
  normalized: boolean;
}

/** Gemini's computer-use functions, whose coordinates are on a 0–999 grid. */
const NORMALIZED_FUNCTIONS = new Set([
  "click_at",
  "hover_at",
  "type_text_at",
  "scroll_at",
  "drag_and_drop",
]);

function pointOf(x: unknown, y: unknown): Point | undefined {
  return typeof x === "number" && typeof y === "number" &&
      Number.isFinite(x) && Number.isFinite(y)
    ? { x, y }
    : undefined;
}

function pairOf(value: unknown): Point | undefined {
  return Array.isArray(value) ? pointOf(value[0], value[1]) : undefined;
}

/**
 * The action a tool call carried, as the report labels and marks it.
 *
 * @param name The tool (or Gemini function) called.
 * @param args Its arguments as the model sent them.
 * @returns The label and the pointer's points.
 */
export function shotAction(name: string, args: unknown): ShotAction {
  const input = (typeof args === "object" && args !== null ? args : {}) as
    & Record<string, unknown>
    & { action?: unknown };
  const nested = typeof input.action === "object" && input.action !== null
    ? input.action as Record<string, unknown>
    : undefined;
  const fields = nested ?? input;
  const kind = String(
    (typeof input.action === "string" ? input.action : undefined) ??
      fields.type ?? name,
  ).slice(0, 40);
  const points = [
    pairOf(fields.start_coordinate),
    pairOf(fields.coordinate),
    pointOf(fields.x, fields.y),
    ...(Array.isArray(fields.path)
      ? fields.path.slice(0, 50).map((p) =>
        pointOf(
          (p as Record<string, unknown>)?.x,
          (p as Record<string, unknown>)?.y,
        )
      )
      : []),
    pointOf(fields.destination_x, fields.destination_y),
  ].filter((p): p is Point => p !== undefined);
  const where = points.length === 0
    ? ""
    : points.length === 1
    ? ` at (${points[0].x}, ${points[0].y})`
    : ` from (${points[0].x}, ${points[0].y}) to (${points.at(-1)!.x}, ${
      points.at(-1)!.y
    })`;
  const text = typeof fields.text === "string"
    ? ` "${fields.text.slice(0, 60)}"`
    : Array.isArray(fields.keys)
    ? ` ${fields.keys.slice(0, 8).map(String).join("+")}`
    : "";
  return {
    label: `${kind}${where}${text}`,
    points,
    normalized: NORMALIZED_FUNCTIONS.has(name),
  };
}

/**
 * A PNG's or JPEG's size from its bytes, when they say it.
 *
 * @param bytes The image.
 * @returns Width and height, pixels.
 */
export function imageSize(
  bytes: Uint8Array,
): { width: number; height: number } | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= 24 && bytes[0] === 0x89 && bytes[1] === 0x50) {
    return { width: view.getUint32(16), height: view.getUint32(20) };
  }
  if (bytes.length > 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    // The first start-of-frame segment holds the size.
    for (let at = 2; at + 9 < bytes.length;) {
      if (bytes[at] !== 0xff) return undefined;
      const marker = bytes[at + 1];
      const length = view.getUint16(at + 2);
      if (
        marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)
      ) {
        return {
          width: view.getUint16(at + 7),
          height: view.getUint16(at + 5),
        };
      }
      at += 2 + length;
    }
  }
  return undefined;
}

/**
 * The screenshot's figure: the image (a click enlarges it), the marks of
 * the action on it, and the action as its caption.
 *
 * @param src The image's `data:` URL.
 * @param base64 Its bytes, base64.
 * @param alt Its text alternative.
 * @param action The action that produced it, if a tool call did.
 * @returns The HTML.
 */
export function shotFigure(
  src: string,
  base64: string,
  alt: string,
  action?: ShotAction,
): string {
  const size = imageSize(Buffer.from(base64.slice(0, 64 * 1024), "base64"));
  const marks = size && action ? marksOf(action, size) : "";
  return `<figure class="shot"><details><summary title="Click to enlarge, again to close"><span class="frame"><img src="${src}" alt="${
    esc(alt)
  }" loading="lazy">${marks}</span></summary></details>${
    action
      ? `<figcaption>after <code>${esc(action.label)}</code></figcaption>`
      : ""
  }</figure>`;
}

/** The marks of an action's points, placed in percent of the image. */
function marksOf(
  action: ShotAction,
  size: { width: number; height: number },
): string {
  const scale = action.normalized
    ? { x: size.width / 1000, y: size.height / 1000 }
    : { x: 1, y: 1 };
  const at = action.points.map((p) => ({
    x: Math.min(100, Math.max(0, (p.x * scale.x / size.width) * 100)),
    y: Math.min(100, Math.max(0, (p.y * scale.y / size.height) * 100)),
  }));
  if (at.length === 0) return "";
  const line = at.length > 1
    ? `<svg class="drag" viewBox="0 0 100 100" preserveAspectRatio="none" aria-hidden="true"><polyline points="${
      at.map((p) => `${p.x.toFixed(2)},${p.y.toFixed(2)}`).join(" ")
    }"/></svg>`
    : "";
  const mark = (p: { x: number; y: number }, kind: string) =>
    `<span class="mark ${kind}" style="left:${p.x.toFixed(2)}%;top:${
      p.y.toFixed(2)
    }%" title="${esc(action.label)}"></span>`;
  return `${line}${
    at.length > 1
      ? `${mark(at[0], "from")}${mark(at.at(-1)!, "to")}`
      : mark(at[0], "at")
  }<span class="sr-only">Marked on the screenshot: ${esc(action.label)} (${
    num(at[0].x).toFixed(0)
  }% across, ${num(at[0].y).toFixed(0)}% down)</span>`;
}
