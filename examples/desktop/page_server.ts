/**
 * The page's own server, on loopback: it serves the guest-book page, hears
 * from it where its parts are on the screen, what was clicked and what was
 * submitted, and tells it to reload when a new run starts. The reward is
 * decided here, from what the page submitted.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";

const rect = z.object({
  left: z.number(),
  top: z.number(),
  width: z.number().nonnegative(),
  height: z.number().nonnegative(),
});

const layoutSchema = z.object({
  run: z.number().int().nonnegative(),
  window: z.object({
    screenX: z.number(),
    screenY: z.number(),
    outerWidth: z.number(),
    outerHeight: z.number(),
    innerWidth: z.number(),
    innerHeight: z.number(),
    devicePixelRatio: z.number().positive(),
  }),
  screen: z.object({ width: z.number(), height: z.number() }),
  elements: z.object({ word: rect, submit: rect }),
});

/** What the page reported about itself: its window and its parts, in CSS pixels. */
export type PageLayout = z.infer<typeof layoutSchema>;

/** The names of the page's parts. */
export type PageElement = keyof PageLayout["elements"];

const clickSchema = z.object({
  run: z.number().int().nonnegative(),
  target: z.enum(["word", "submit"]),
  button: z.number().int(),
  x: z.number(),
  y: z.number(),
});

/** A click the page saw on one of its parts (screen pixels). */
export type PageClick = z.infer<typeof clickSchema>;

const submitSchema = z.object({
  run: z.number().int().nonnegative(),
  word: z.string().max(1_000),
});

const LONG_POLL_MS = 20_000;
const MAX_EVENTS = 1_000;

/** A point on the real screen. */
export interface ScreenPoint {
  /** Pixels from the left. */
  x: number;
  /** Pixels from the top. */
  y: number;
}

/**
 * The centre of a part of the page in real screen pixels: the window's
 * position, the browser's own bars (outer minus inner height), and the
 * element's place in the viewport, scaled by the device pixel ratio.
 *
 * @param layout What the page reported.
 * @param element Which part.
 * @returns The point.
 */
export function elementCenter(
  layout: PageLayout,
  element: PageElement,
): ScreenPoint {
  const { window: w } = layout;
  const box = layout.elements[element];
  const top = w.screenY + Math.max(0, w.outerHeight - w.innerHeight);
  const left = w.screenX + Math.max(0, w.outerWidth - w.innerWidth) / 2;
  return {
    x: Math.round(left + (box.left + box.width / 2) * w.devicePixelRatio),
    y: Math.round(top + (box.top + box.height / 2) * w.devicePixelRatio),
  };
}

/** The page's server. */
export interface PageServer extends AsyncDisposable {
  /** The page's URL, e.g. `http://127.0.0.1:40123/`. */
  url: string;
  /** The current run: 0 until the first {@linkcode PageServer.startRun}. */
  readonly run: number;
  /**
   * Starts a new run: the page reloads (a fresh form) and reports its layout.
   *
   * @param timeoutMs How long to wait for the report.
   * @returns The run's number and the page's layout.
   */
  startRun(timeoutMs: number): Promise<{ run: number; layout: PageLayout }>;
  /**
   * Waits for the page's layout report of the current run.
   *
   * @param timeoutMs How long to wait.
   * @returns The layout.
   */
  layout(timeoutMs: number): Promise<PageLayout>;
  /**
   * What the page submitted in a run, waiting up to `waitMs` for it.
   *
   * @returns The submitted word, or `undefined`.
   */
  submission(run: number, waitMs: number): Promise<string | undefined>;
  /** Clicks the page saw, oldest first. */
  readonly clicks: readonly PageClick[];
  /** Stops the server. */
  close(): Promise<void>;
}

/**
 * Serves the page on 127.0.0.1 on a free port.
 *
 * @returns The running server.
 */
export async function startPageServer(): Promise<PageServer> {
  const html = await Deno.readTextFile(new URL("./page.html", import.meta.url));
  let run = 0;
  const layouts = new Map<number, PageLayout>();
  const submissions = new Map<number, string>();
  const clicks: PageClick[] = [];
  // Resolved (and replaced) whenever something the server waits on changes.
  let changed = Promise.withResolvers<void>();
  const notify = () => {
    changed.resolve();
    changed = Promise.withResolvers<void>();
  };
  let closing = false;
  const waitFor = async <T>(
    read: () => T | undefined,
    timeoutMs: number,
  ): Promise<T | undefined> => {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const value = read();
      if (value !== undefined || closing) return value;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        changed.promise,
        new Promise((resolve) => timer = setTimeout(resolve, left)),
      ]);
      clearTimeout(timer);
    }
  };

  const app = new Hono();
  app.get("/", (c) => c.html(html, 200, { "cache-control": "no-store" }));
  app.get("/state", (c) => c.json({ run }));
  app.get("/next", async (c) => {
    const seen = Number(c.req.query("run"));
    const newer = await waitFor(
      () => run !== seen ? run : undefined,
      LONG_POLL_MS,
    );
    return newer === undefined ? c.body(null, 204) : c.json({ run: newer });
  });
  app.post("/layout", async (c) => {
    const parsed = layoutSchema.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: "Bad layout" }, 400);
    layouts.set(parsed.data.run, parsed.data);
    notify();
    return c.json({ ok: true });
  });
  app.post("/clicked", async (c) => {
    const parsed = clickSchema.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: "Bad click" }, 400);
    clicks.push(parsed.data);
    if (clicks.length > MAX_EVENTS) clicks.shift();
    notify();
    return c.json({ ok: true });
  });
  app.post("/submit", async (c) => {
    const parsed = submitSchema.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: "Bad submission" }, 400);
    if (parsed.data.run !== run) {
      return c.json({ error: "That run is over" }, 409);
    }
    submissions.set(parsed.data.run, parsed.data.word);
    notify();
    return c.json({ ok: true });
  });

  const controller = new AbortController();
  const { promise: listening, resolve } = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: controller.signal,
    onListen: ({ port }) => resolve(port),
  }, app.fetch);
  const port = await listening;

  const layout = async (timeoutMs: number) => {
    const current = run;
    const found = await waitFor(() => layouts.get(current), timeoutMs);
    if (!found) {
      throw new Error(
        `The page did not report its layout within ${timeoutMs} ms`,
      );
    }
    return found;
  };
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      closing = true;
      notify();
      controller.abort();
      await server.finished;
    })();
  return {
    url: `http://127.0.0.1:${port}/`,
    get run() {
      return run;
    },
    startRun: async (timeoutMs) => {
      run += 1;
      layouts.delete(run);
      notify();
      return { run, layout: await layout(timeoutMs) };
    },
    layout,
    submission: (which, waitMs) =>
      waitFor(() => submissions.get(which), waitMs),
    clicks,
    close,
    [Symbol.asyncDispose]: close,
  };
}
