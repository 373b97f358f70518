/**
 * Key names: the aliases agents send (`ctrl`, `Control`, `CMD`, `ENTER`,
 * `ArrowUp`, `Page_Down`, `+`, …) turned into X keysym names as xdotool
 * takes them, so every executor sees one spelling.
 *
 * @module
 */

const NAMED: Record<string, string> = {};

function alias(keysym: string, ...names: string[]): void {
  for (const name of [keysym, ...names]) NAMED[name.toLowerCase()] = keysym;
}

alias("ctrl", "control", "ctl", "control_l", "control_r", "ctrl_l", "ctrl_r");
alias("alt", "option", "opt", "alt_l", "alt_r", "menu_alt");
alias("shift", "shift_l", "shift_r");
alias(
  "super",
  "cmd",
  "command",
  "meta",
  "meta_l",
  "win",
  "windows",
  "super_l",
  "super_r",
  "os",
);
alias("Return", "enter", "kp_enter", "ret");
alias("Escape", "esc");
alias("Tab");
alias("space", "spacebar", " ");
alias("BackSpace", "backspace", "back_space", "bksp");
alias("Delete", "del");
alias("Insert", "ins");
alias("Up", "arrowup", "arrow_up", "uparrow");
alias("Down", "arrowdown", "arrow_down", "downarrow");
alias("Left", "arrowleft", "arrow_left", "leftarrow");
alias("Right", "arrowright", "arrow_right", "rightarrow");
alias("Page_Up", "pageup", "pgup", "prior");
alias("Page_Down", "pagedown", "pgdn", "next");
alias("Home");
alias("End");
alias("Caps_Lock", "capslock");
alias("Print", "printscreen", "prtsc");
alias("Menu", "contextmenu", "apps");
for (let n = 1; n <= 24; n++) alias(`F${n}`);
alias("Pause", "break");
alias("Num_Lock", "numlock");
alias("Scroll_Lock", "scrolllock");
for (let n = 0; n <= 9; n++) alias(`KP_${n}`);
alias("KP_Add");
alias("KP_Subtract");
alias("KP_Multiply");
alias("KP_Divide");
alias("KP_Decimal");
alias("XF86AudioMute", "audiovolumemute", "volumemute");
alias("XF86AudioRaiseVolume", "audiovolumeup", "volumeup");
alias("XF86AudioLowerVolume", "audiovolumedown", "volumedown");

/** Printable characters that are not their own keysym name. */
const PUNCTUATION: Record<string, string> = {
  "+": "plus",
  "-": "minus",
  "=": "equal",
  ",": "comma",
  ".": "period",
  "/": "slash",
  "\\": "backslash",
  ";": "semicolon",
  "'": "apostrophe",
  "`": "grave",
  "[": "bracketleft",
  "]": "bracketright",
  "!": "exclam",
  "@": "at",
  "#": "numbersign",
  "$": "dollar",
  "%": "percent",
  "^": "asciicircum",
  "&": "ampersand",
  "*": "asterisk",
  "(": "parenleft",
  ")": "parenright",
  "_": "underscore",
  "{": "braceleft",
  "}": "braceright",
  "|": "bar",
  ":": "colon",
  '"': "quotedbl",
  "<": "less",
  ">": "greater",
  "?": "question",
  "~": "asciitilde",
};
for (const keysym of Object.values(PUNCTUATION)) alias(keysym);

/**
 * Splits a key list into single keys: each element may itself be a
 * combination joined with `+` (`"ctrl+a"`, `"ctrl++"` for ctrl and plus).
 */
function splitKeys(keys: readonly string[]): string[] {
  return keys.flatMap((key) => key === "+" ? [key] : key.split(/\+(?!$)/));
}

/**
 * Turns the keys of one combination into xdotool keysym names.
 *
 * @param keys Key names in any case, each possibly `"a+b"`; e.g. `["ctrl", "A"]`, `["Control+a"]`, `["ENTER"]`.
 * @returns The keysyms, e.g. `["ctrl", "a"]`, `["Return"]`.
 * @throws {RangeError} On an empty list, an empty element or an unknown key, naming it.
 * @example
 * ```ts
 * import { keysyms } from "./keys.ts";
 * keysyms(["Control+A"]); // ["ctrl", "a"]
 * keysyms(["CMD", "shift", "arrowup"]); // ["super", "shift", "Up"]
 * keysyms(["Return"]); // ["Return"]
 * ```
 */
export function keysyms(keys: readonly string[]): string[] {
  const parts = splitKeys(keys);
  if (parts.length === 0) {
    throw new RangeError("Cannot press keys: the key list is empty");
  }
  const combination = parts.length > 1;
  return parts.map((part) => {
    const name = part.length === 1 ? part : part.trim();
    if (name === "") {
      throw new RangeError(
        `Cannot press keys: empty key name in "${keys.join(", ")}"`,
      );
    }
    // Own keys only: "constructor" or "__proto__" is no key.
    const lower = name.toLowerCase();
    if (Object.hasOwn(NAMED, lower)) return NAMED[lower];
    if (Object.hasOwn(PUNCTUATION, name)) return PUNCTUATION[name];
    if (/^[a-z0-9]$/i.test(name)) {
      // In a combination "Control+A" means the A key, not shift+a.
      return combination ? name.toLowerCase() : name;
    }
    throw new RangeError(`Unknown key "${name}"`);
  });
}
