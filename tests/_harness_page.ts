/**
 * What the agent-harness suites (`tests/harness_*_test.ts`) share: the
 * desktop example's guest-book page served by its own server
 * (`examples/desktop/page_server.ts`) in a real headless Chromium
 * (`playwright-core`, Debian's `chromium`), the instruction the simulator's
 * scripted agent reads (with the form's real coordinates, from the page's
 * own layout report), key names of every convention mapped to Playwright's,
 * and the check that the form was completed on the page.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import {
  type PageLayout,
  type PageServer,
  startPageServer,
} from "../examples/desktop/page_server.ts";

/** Debian's Chromium (`.ci/run` installs it). */
export const CHROMIUM: string = "/usr/bin/chromium";

/** The flags every harness gives Chromium: headless, no sandbox (root in CI), no GPU. */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
];

/** The viewport the harnesses use, in CSS pixels (device pixel ratio 1). */
export const VIEWPORT: { width: number; height: number } = {
  width: 1280,
  height: 800,
};

/** How long the page may take to load and report its layout. */
const LAYOUT_TIMEOUT_MS = 15_000;

/**
 * Why the browser suites cannot run here, or `undefined` when they can.
 *
 * @returns A sentence naming what is missing.
 */
export function chromiumMissing(): string | undefined {
  try {
    if (Deno.statSync(CHROMIUM).isFile) return undefined;
  } catch { /* reported below */ }
  return `${CHROMIUM} not found (apt-get install -y chromium)`;
}

/**
 * The instruction the simulator's scripted agent follows
 * (`gateway/simulator/computer_use.ts`): the screen, then a click on the
 * word box's centre, the word typed, Enter pressed. The coordinates are the
 * page's own report, in viewport pixels, which is what a screenshot of the
 * viewport shows at device pixel ratio 1.
 *
 * @param layout What the page reported.
 * @param word The word to submit.
 * @returns The instruction.
 */
export function formInstruction(layout: PageLayout, word: string): string {
  const box = layout.elements.word;
  const x = Math.round(box.left + box.width / 2);
  const y = Math.round(box.top + box.height / 2);
  const { innerWidth, innerHeight } = layout.window;
  return `The screen is ${innerWidth}x${innerHeight}. Click the text box at (${x}, ${y}), type "${word}", then press Enter.`;
}

/** Key names of Anthropic (xdotool), OpenAI and Gemini, in Playwright's spelling. */
const PLAYWRIGHT_KEYS: Record<string, string> = {
  return: "Enter",
  enter: "Enter",
  ctrl: "Control",
  control: "Control",
  alt: "Alt",
  option: "Alt",
  shift: "Shift",
  cmd: "Meta",
  meta: "Meta",
  super: "Meta",
  esc: "Escape",
  escape: "Escape",
  tab: "Tab",
  space: "Space",
  backspace: "Backspace",
  delete: "Delete",
  up: "ArrowUp",
  arrowup: "ArrowUp",
  down: "ArrowDown",
  arrowdown: "ArrowDown",
  left: "ArrowLeft",
  arrowleft: "ArrowLeft",
  right: "ArrowRight",
  arrowright: "ArrowRight",
  page_up: "PageUp",
  pageup: "PageUp",
  page_down: "PageDown",
  pagedown: "PageDown",
  home: "Home",
  end: "End",
};

/**
 * A key combination as Playwright's `keyboard.press` takes it: `Return`,
 * `ENTER` and `Enter` all become `Enter`, `ctrl+a` becomes `Control+a`.
 *
 * @param keys The keys held together, in any convention's spelling.
 * @returns The combination for `keyboard.press`.
 */
export function playwrightKeys(keys: readonly string[]): string {
  return keys.map((key) => {
    const known = PLAYWRIGHT_KEYS[key.toLowerCase()];
    if (known) return known;
    return key.length === 1 ? key.toLowerCase() : key;
  }).join("+");
}

/** The guest-book page open in Chromium, for harnesses that drive a page of their own. */
export interface GuestBook extends AsyncDisposable {
  /** The page's server: layout, clicks and submissions. */
  server: PageServer;
  /** The browser. */
  browser: Browser;
  /** The page, loaded, its layout reported. */
  page: Page;
  /** What the page reported. */
  layout: PageLayout;
  /** Closes the browser, then the server. */
  close(): Promise<void>;
}

/**
 * Serves the guest-book page and opens it in headless Chromium at
 * {@linkcode VIEWPORT}, waiting until the page reported its layout.
 *
 * @returns The open page; `await using` closes it.
 */
export async function openGuestBook(): Promise<GuestBook> {
  const server = await startPageServer();
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [...CHROMIUM_FLAGS],
    });
    const page = await browser.newPage({
      viewport: VIEWPORT,
      deviceScaleFactor: 1,
    });
    await page.goto(server.url);
    const layout = await server.layout(LAYOUT_TIMEOUT_MS);
    const opened = browser;
    let closed: Promise<void> | undefined;
    const close = () =>
      closed ??= (async () => {
        await opened.close();
        await server.close();
      })();
    return {
      server,
      browser,
      page,
      layout,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await browser?.close();
    await server.close();
    throw error;
  }
}

/**
 * Waits for the page (opened by a harness's own browser) to report its
 * layout.
 *
 * @param server The page's server.
 * @returns The layout.
 */
export function guestBookLayout(server: PageServer): Promise<PageLayout> {
  return server.layout(LAYOUT_TIMEOUT_MS);
}

/**
 * Asserts that the form was completed on the page: the page submitted
 * `word` in the current run, and it saw a real pointer press on the word
 * box (so the submission came from a click and typing, not from elsewhere).
 *
 * @param server The page's server.
 * @param word The word the instruction asked for.
 * @param waitMs How long the submission may take to arrive.
 */
export async function assertFormCompleted(
  server: PageServer,
  word: string,
  waitMs = 5_000,
): Promise<void> {
  const submitted = await server.submission(server.run, waitMs);
  assert.equal(
    submitted,
    word,
    `the page should have submitted "${word}" in run ${server.run}`,
  );
  assert.ok(
    server.clicks.some((click) =>
      click.run === server.run && click.target === "word" && click.button === 0
    ),
    `the page saw no left click on the word box: ${
      JSON.stringify(server.clicks)
    }`,
  );
}

/** A model as `GET /v1/models` lists it, with what the harnesses read. */
export interface ListedModel {
  /** The gateway's id. */
  id: string;
  /** The provider. */
  owned_by: string;
  /** The routes it is served on. */
  routes: string[];
  /** Whether the gateway holds a key for it. */
  available?: boolean;
  /** Its deprecation or retirement, when it has one. */
  lifecycle?: { status?: string };
  /** How computer use is reached on it, for models that have it. */
  computer_use?: {
    tool: string;
    beta?: string;
    environment?: string;
    environments?: string[];
  };
}

/**
 * The computer-use models of `GET /v1/models` a harness may call: served
 * (a key is configured), not retired, current ones before deprecated ones,
 * so a case picks the same kind of model after a seed model retires.
 *
 * @param gatewayUrl The gateway's base URL.
 * @returns The models with `computer_use`, active first.
 */
export async function computerUseModels(
  gatewayUrl: string,
): Promise<ListedModel[]> {
  const response = await fetch(`${gatewayUrl}/v1/models`);
  assert.equal(response.status, 200);
  const { data } = await response.json() as { data: ListedModel[] };
  const usable = data.filter((model) =>
    model.computer_use !== undefined && model.available !== false &&
    model.lifecycle?.status !== "retired"
  );
  const deprecated = (model: ListedModel) =>
    model.lifecycle?.status === "deprecated" ? 1 : 0;
  return usable.sort((a, b) => deprecated(a) - deprecated(b));
}
