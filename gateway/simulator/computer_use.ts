/**
 * The simulator's computer-use agent, independent of wire format: a
 * deterministic plan read from the conversation's first user message, one
 * action per turn counted from the computer actions already in the
 * conversation, then a final text that starts with "Done".
 *
 * The agent plays when the request declares a computer tool (Anthropic
 * `computer_*`, Responses `computer_use_preview`, Gemini `computerUse`, a
 * chat function named `computer`) and the first user message gives at least
 * one instruction. The grammar, case-insensitive, read in order of appearance:
 *
 * - `screen is W x H` (or `W×H`, `WxH`): the screen in agent pixels (else the
 *   size the tool declares, else 1920 × 1080). Gemini's 0–999 coordinates are
 *   normalised from it.
 * - `click … (X, Y)`: a left click, e.g. "Click the text box at (412, 300)".
 * - `double-click … (X, Y)`: a double click.
 * - `type "TEXT"`: types TEXT (straight or curly quotes).
 * - `press KEY`: a key or combination, e.g. "press Enter", "press ctrl+a",
 *   "press the Tab key".
 * - `zoom … (X0, Y0, X1, Y1)`: a zoomed screenshot of that region, e.g.
 *   "Zoom into the form at (0, 0, 640, 400)"; only where the tool has zoom
 *   (Claude's `computer_20251124` with `enable_zoom`, the toolset), dropped
 *   elsewhere.
 * - `[confirm]` anywhere: the first action after the screenshot carries a
 *   safety check that the next request must acknowledge (Responses and Gemini).
 *
 * For example: `The screen is 1280x800. Click the text box at (412, 300),
 * type "hello", then press Enter.`
 *
 * The agent first asks for a screenshot, except on Gemini, which has no such
 * action, folds a click followed by typing into one `type_text_at` and
 * clicks twice for a double click. Where the wire batches actions (OpenAI's
 * GA `computer` tool, Claude's toolset), the screenshot is a turn of its
 * own and the rest come in one turn ({@linkcode turnActions}).
 *
 * @module
 */

/** One action of the agent, in agent pixels. */
export type ComputerAction =
  | { type: "screenshot" }
  | { type: "click"; x: number; y: number }
  | { type: "double_click"; x: number; y: number }
  | { type: "type"; text: string; at?: { x: number; y: number } }
  | { type: "key"; keys: string[] }
  | { type: "zoom"; region: [number, number, number, number] };

/** Which convention the plan is for: Gemini has no screenshot action and folds click + type. */
export type ComputerConvention = "anthropic" | "responses" | "gemini" | "chat";

/** What the declared tool can do, beyond the actions every wire has. */
export interface ComputerWire {
  /** The tool has a zoom action (else zoom steps are dropped). */
  zoom?: boolean;
}

/** The agent's whole episode. */
export interface ComputerPlan {
  /** Screen width in agent pixels. */
  width: number;
  /** Screen height in agent pixels. */
  height: number;
  /** The actions, in order, the first screenshot included where the convention has one. */
  actions: ComputerAction[];
  /** Index of the action that carries a safety check, if the prompt says `[confirm]`. */
  confirmAt?: number;
}

/** The screen size when neither the prompt nor the tool gives one. */
export const DEFAULT_SCREEN = { width: 1920, height: 1080 } as const;

/** Instructions longer than this are not read: a hostile prompt cannot make the scan slow. */
const MAX_PROMPT_CHARS = 100_000;
/** More steps than this are ignored. */
const MAX_STEPS = 200;

const INSTRUCTION =
  /screen\s+is\s+(\d{1,5})\s*[x×]\s*(\d{1,5})|\b(double[- ]?click|click)\b[^()\n]{0,120}?\(\s*(-?\d{1,6})\s*,\s*(-?\d{1,6})\s*\)|\btype\s+["“]([^"”\n]{0,2000})["”]|\bpress\s+(?:the\s+)?([a-z0-9_]+(?:\s*\+\s*[a-z0-9_]+)*)|\[confirm\]|\bzoom\b[^()\n]{0,120}?\(\s*(\d{1,6})\s*,\s*(\d{1,6})\s*,\s*(\d{1,6})\s*,\s*(\d{1,6})\s*\)/giu;

/** Canonical key names, with each convention's spelling. */
const KEYS: Record<
  string,
  { xdotool: string; openai: string; gemini: string }
> = {
  enter: { xdotool: "Return", openai: "ENTER", gemini: "Enter" },
  ctrl: { xdotool: "ctrl", openai: "CTRL", gemini: "Control" },
  alt: { xdotool: "alt", openai: "ALT", gemini: "Alt" },
  shift: { xdotool: "shift", openai: "SHIFT", gemini: "Shift" },
  meta: { xdotool: "super", openai: "CMD", gemini: "Meta" },
  escape: { xdotool: "Escape", openai: "ESC", gemini: "Escape" },
  tab: { xdotool: "Tab", openai: "TAB", gemini: "Tab" },
  space: { xdotool: "space", openai: "SPACE", gemini: "Space" },
  backspace: { xdotool: "BackSpace", openai: "BACKSPACE", gemini: "Backspace" },
  delete: { xdotool: "Delete", openai: "DELETE", gemini: "Delete" },
  insert: { xdotool: "Insert", openai: "INSERT", gemini: "Insert" },
  up: { xdotool: "Up", openai: "ARROWUP", gemini: "ArrowUp" },
  down: { xdotool: "Down", openai: "ARROWDOWN", gemini: "ArrowDown" },
  left: { xdotool: "Left", openai: "ARROWLEFT", gemini: "ArrowLeft" },
  right: { xdotool: "Right", openai: "ARROWRIGHT", gemini: "ArrowRight" },
  pageup: { xdotool: "Page_Up", openai: "PAGEUP", gemini: "PageUp" },
  pagedown: { xdotool: "Page_Down", openai: "PAGEDOWN", gemini: "PageDown" },
  home: { xdotool: "Home", openai: "HOME", gemini: "Home" },
  end: { xdotool: "End", openai: "END", gemini: "End" },
};

const KEY_ALIASES: Record<string, string> = {
  return: "enter",
  control: "ctrl",
  option: "alt",
  cmd: "meta",
  command: "meta",
  super: "meta",
  win: "meta",
  windows: "meta",
  esc: "escape",
  spacebar: "space",
  del: "delete",
  arrowup: "up",
  arrowdown: "down",
  arrowleft: "left",
  arrowright: "right",
  page_up: "pageup",
  pgup: "pageup",
  page_down: "pagedown",
  pgdn: "pagedown",
};

/**
 * A key name in canonical form: lower case, aliases resolved (`return` →
 * `enter`, `control` → `ctrl`, `cmd` → `meta`, `arrowup` → `up`, …).
 */
function canonicalKey(name: string): string {
  const lower = name.toLowerCase();
  return KEY_ALIASES[lower] ?? lower;
}

/**
 * Spells a canonical key the way a convention writes it: xdotool names for
 * Anthropic and the MCP tool (`Return`, `ctrl`), OpenAI's upper case
 * (`ENTER`, `CTRL`, `A`), Gemini's browser names (`Enter`, `Control`, `A`).
 *
 * @example
 * ```ts
 * import { spellKey } from "./computer_use.ts";
 * spellKey("enter", "xdotool"); // "Return"
 * spellKey("a", "gemini"); // "A"
 * ```
 *
 * @param key A canonical key name (as in {@linkcode ComputerAction} `keys`).
 * @param style The spelling.
 * @returns The key as the convention writes it.
 */
export function spellKey(
  key: string,
  style: "xdotool" | "openai" | "gemini",
): string {
  const known = KEYS[key];
  if (known) return known[style];
  if (/^f\d{1,2}$/.test(key)) return key.toUpperCase();
  if (key.length === 1) return style === "xdotool" ? key : key.toUpperCase();
  return key;
}

/** Parsed instructions, before a convention shapes them. */
interface Instructions {
  size?: { width: number; height: number };
  steps: Exclude<ComputerAction, { type: "screenshot" }>[];
  confirm: boolean;
}

function readInstructions(text: string): Instructions {
  const result: Instructions = { steps: [], confirm: false };
  for (const match of text.slice(0, MAX_PROMPT_CHARS).matchAll(INSTRUCTION)) {
    const [whole, width, height, click, x, y, typed, keys, ...region] = match;
    if (width !== undefined) {
      const size = { width: Number(width), height: Number(height) };
      if (size.width > 0 && size.height > 0) result.size ??= size;
    } else if (click !== undefined) {
      const type = click.toLowerCase().startsWith("double")
        ? "double_click"
        : "click";
      result.steps.push({ type, x: Number(x), y: Number(y) });
    } else if (typed !== undefined) {
      result.steps.push({ type: "type", text: typed });
    } else if (keys !== undefined) {
      result.steps.push({
        type: "key",
        keys: keys.split("+").map((key) => canonicalKey(key.trim())),
      });
    } else if (whole.toLowerCase() === "[confirm]") {
      result.confirm = true;
    } else if (region[0] !== undefined) {
      const [x0, y0, x1, y1] = region.map(Number);
      result.steps.push({ type: "zoom", region: [x0, y0, x1, y1] });
    }
    if (result.steps.length >= MAX_STEPS) break;
  }
  return result;
}

/**
 * Gemini: a click followed by typing becomes one `type_text_at` there, typing
 * elsewhere types where the last click was, and a double click is two clicks.
 */
function foldForGemini(
  steps: Instructions["steps"],
  screen: { width: number; height: number },
): ComputerAction[] {
  const actions: ComputerAction[] = [];
  let last = {
    x: Math.floor(screen.width / 2),
    y: Math.floor(screen.height / 2),
  };
  for (const step of steps) {
    if (step.type === "type") {
      const previous = actions.at(-1);
      if (previous?.type === "click") {
        actions[actions.length - 1] = {
          type: "type",
          text: step.text,
          at: { x: previous.x, y: previous.y },
        };
      } else actions.push({ ...step, at: last });
      continue;
    }
    if (step.type === "click" || step.type === "double_click") {
      last = { x: step.x, y: step.y };
    }
    if (step.type === "double_click") {
      // Gemini has no double click: two clicks at the same point.
      const click = { type: "click" as const, x: step.x, y: step.y };
      actions.push(click, { ...click });
    } else actions.push(step);
  }
  return actions;
}

/**
 * Reads the agent's plan from the first user message, for one convention.
 *
 * @example
 * ```ts
 * import { planComputerUse } from "./computer_use.ts";
 * const plan = planComputerUse(
 *   'The screen is 1280x800. Click the box at (412, 300), type "hi", then press Enter.',
 *   undefined,
 *   "anthropic",
 * );
 * plan?.actions.map((action) => action.type); // ["screenshot", "click", "type", "key"]
 * ```
 *
 * @param firstUserText The conversation's first user message.
 * @param declared The screen size the tool declaration gives, if any.
 * @param convention The wire convention.
 * @param wire What the declared tool can do (zoom).
 * @returns The plan, or `undefined` when the message gives no instruction.
 */
export function planComputerUse(
  firstUserText: string,
  declared: { width: number; height: number } | undefined,
  convention: ComputerConvention,
  wire: ComputerWire = {},
): ComputerPlan | undefined {
  const instructions = readInstructions(firstUserText);
  if (!wire.zoom) {
    instructions.steps = instructions.steps.filter((step) =>
      step.type !== "zoom"
    );
  }
  if (instructions.steps.length === 0) return undefined;
  const screen = instructions.size ?? declared ?? DEFAULT_SCREEN;
  const actions: ComputerAction[] = convention === "gemini"
    ? foldForGemini(instructions.steps, screen)
    : [{ type: "screenshot" }, ...instructions.steps];
  return {
    width: screen.width,
    height: screen.height,
    actions,
    confirmAt: instructions.confirm
      ? (convention === "gemini" ? 0 : 1)
      : undefined,
  };
}

/**
 * A coordinate normalised to Gemini's 0–999 grid.
 *
 * @example
 * ```ts
 * import { normalise } from "./computer_use.ts";
 * normalise(412, 1280); // 322
 * ```
 *
 * @param value The coordinate in agent pixels.
 * @param extent The screen's width (for x) or height (for y).
 * @returns The normalised coordinate.
 */
export function normalise(value: number, extent: number): number {
  return Math.min(999, Math.max(0, Math.round((value * 1000) / extent)));
}

/** What one turn of the agent is: the next action (with its safety flag), or the end. */
export interface ComputerTurn {
  /** The plan. */
  plan: ComputerPlan;
  /** How many of its actions the conversation already holds. */
  done: number;
  /** Whether the wire batches actions in one turn (see {@linkcode turnActions}). */
  batched?: boolean;
}

/**
 * The final answer once every action is done: "Done." and what was done.
 *
 * @example
 * ```ts
 * import { doneText } from "./computer_use.ts";
 * doneText([{ type: "click", x: 1, y: 2 }, { type: "key", keys: ["enter"] }]);
 * // "Done. I clicked (1, 2) and pressed Enter."
 * ```
 *
 * @param actions The plan's actions.
 * @returns The text.
 */
export function doneText(actions: readonly ComputerAction[]): string {
  const said = actions.flatMap((action): string[] => {
    switch (action.type) {
      case "screenshot":
        return [];
      case "click":
        return [`clicked (${action.x}, ${action.y})`];
      case "double_click":
        return [`double-clicked (${action.x}, ${action.y})`];
      case "type":
        return [
          action.at
            ? `typed "${action.text}" at (${action.at.x}, ${action.at.y})`
            : `typed "${action.text}"`,
        ];
      case "key":
        return [
          `pressed ${
            action.keys.map((key) => spellKey(key, "gemini")).join("+")
          }`,
        ];
      case "zoom":
        return [`zoomed into (${action.region.join(", ")})`];
    }
  });
  if (said.length === 0) return "Done.";
  const list = said.length === 1
    ? said[0]
    : `${said.slice(0, -1).join(", ")} and ${said.at(-1)}`;
  return `Done. I ${list}.`;
}

/**
 * The actions of the turn that starts at `done`: one, or where the wire
 * batches, a screenshot alone and then every action left in one turn, but
 * for an action that carries a safety check, which starts a turn of its own
 * (the check is on the call that carries it).
 *
 * @example
 * ```ts
 * import { planComputerUse, turnActions } from "./computer_use.ts";
 * const plan = planComputerUse('Click (1, 2), type "a", press Enter.', undefined, "responses")!;
 * turnActions(plan, 0, true).map((action) => action.type); // ["screenshot"]
 * turnActions(plan, 1, true).map((action) => action.type); // ["click", "type", "key"]
 * ```
 *
 * @param plan The plan.
 * @param done How many of its actions are done.
 * @param batched Whether the wire batches actions.
 * @returns The turn's actions; none once the plan is done.
 */
export function turnActions(
  plan: ComputerPlan,
  done: number,
  batched: boolean,
): ComputerAction[] {
  const first = plan.actions[done];
  if (first === undefined) return [];
  if (!batched || first.type === "screenshot") return [first];
  const end = plan.confirmAt !== undefined && plan.confirmAt > done
    ? plan.confirmAt
    : plan.actions.length;
  const actions = plan.actions.slice(done, end);
  const screenshot = actions.findIndex((action, index) =>
    index > 0 && action.type === "screenshot"
  );
  return screenshot === -1 ? actions : actions.slice(0, screenshot);
}

/** The safety check's explanation, shown to the user who must confirm. */
export const SAFETY_MESSAGE =
  "The task asked to confirm this action before it is taken.";
