/**
 * The OpenAI Agents SDK (`@openai/agents`) as a computer-use harness,
 * through the gateway to the built-in simulator: its `computerTool` with a
 * `Computer` backed by a real headless Chromium (`playwright-core`) on the
 * desktop example's guest-book page.
 *
 * The SDK picks the tool from the model id alone: the preview tool
 * (`computer_use_preview`, with the display size) for ids starting with
 * `computer-use-preview`, the GA `computer` tool (batched `actions`) for any
 * other. So:
 *
 * - `computer-use-preview`, the provider's own name for the model the
 *   catalog serves as `operator`, gets the preview tool and must complete
 *   the form;
 * - a model whose `/v1/models` entry lists `computer_use.tool: "computer"`
 *   gets the GA tool and must complete the form;
 * - `operator` gets the GA tool, which the upstream model
 *   (`computer-use-preview`) does not take: the run must fail with the
 *   provider's 400, never end as a success with no action.
 *
 * Skipped, saying so, without Chromium.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Agent,
  type Computer,
  computerTool,
  OpenAIProvider,
  Runner,
  setTracingDisabled,
} from "@openai/agents";
import type { Page } from "playwright-core";
import { type Harness, startHarness } from "./_gateway_harness.ts";
import {
  assertFormCompleted,
  chromiumMissing,
  computerUseModels,
  formInstruction,
  type GuestBook,
  openGuestBook,
  playwrightKeys,
  VIEWPORT,
} from "./_harness_page.ts";

const missing = chromiumMissing();
if (missing) console.warn(`OpenAI Agents SDK harness test skipped: ${missing}`);

// The SDK would otherwise export its traces to OpenAI's servers.
setTracingDisabled(true);

/** The most turns one run may take: the plan is a screenshot, a click, typing, Enter, then the answer. */
const MAX_TURNS = 12;
/** How long one run may take: a stuck exchange fails the step rather than the whole suite's time. */
const RUN_TIMEOUT_MS = 60_000;

/**
 * The SDK's `Computer` on a Playwright page, recording every action it
 * carries out (screenshots included).
 */
class PageComputer implements Computer {
  environment = "browser" as const;
  dimensions: [number, number] = [VIEWPORT.width, VIEWPORT.height];
  readonly done: string[] = [];

  constructor(private readonly page: Page) {}

  async screenshot(): Promise<string> {
    this.done.push("screenshot");
    return (await this.page.screenshot({ type: "png" })).toString("base64");
  }
  async click(x: number, y: number, button: string): Promise<void> {
    this.done.push(`click ${x},${y}`);
    await this.page.mouse.click(x, y, {
      button: button === "right" ? "right" : "left",
    });
  }
  async doubleClick(x: number, y: number): Promise<void> {
    this.done.push(`double_click ${x},${y}`);
    await this.page.mouse.dblclick(x, y);
  }
  async scroll(
    x: number,
    y: number,
    scrollX: number,
    scrollY: number,
  ): Promise<void> {
    this.done.push(`scroll ${x},${y}`);
    await this.page.mouse.move(x, y);
    await this.page.mouse.wheel(scrollX, scrollY);
  }
  async type(text: string): Promise<void> {
    this.done.push(`type ${text}`);
    await this.page.keyboard.type(text);
  }
  async wait(): Promise<void> {
    this.done.push("wait");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  async move(x: number, y: number): Promise<void> {
    this.done.push(`move ${x},${y}`);
    await this.page.mouse.move(x, y);
  }
  async keypress(keys: string[]): Promise<void> {
    this.done.push(`keypress ${keys.join("+")}`);
    await this.page.keyboard.press(playwrightKeys(keys));
  }
  async drag(path: [number, number][]): Promise<void> {
    this.done.push("drag");
    const [start, ...rest] = path;
    if (!start) return;
    await this.page.mouse.move(...start);
    await this.page.mouse.down();
    for (const point of rest) await this.page.mouse.move(...point);
    await this.page.mouse.up();
  }
}

/** The SDK's runner, pointed at the gateway as the harness caller. */
function gatewayRunner(harness: Harness): Runner {
  return new Runner({
    modelProvider: new OpenAIProvider({
      apiKey: harness.caller.key,
      baseURL: `${harness.url}/v1`,
      useResponses: true,
    }),
    tracingDisabled: true,
  });
}

/**
 * Runs the SDK's agent with the computer tool on the guest book.
 *
 * @returns The computer (what it did) and the run's final output.
 */
async function runAgent(
  harness: Harness,
  book: GuestBook,
  model: string,
  word: string,
): Promise<{ computer: PageComputer; output: unknown }> {
  const computer = new PageComputer(book.page);
  const agent = new Agent({
    name: "guest-book",
    instructions: "You use the computer to do what the user asks.",
    model,
    tools: [computerTool({ computer })],
  });
  const result = await gatewayRunner(harness).run(
    agent,
    formInstruction(book.layout, word),
    { maxTurns: MAX_TURNS, signal: AbortSignal.timeout(RUN_TIMEOUT_MS) },
  );
  return { computer, output: result.finalOutput };
}

/** The computer tools the Responses requests upstream declared. */
function upstreamComputerTools(harness: Harness): string[] {
  return harness.sim.requests
    .filter((request) => request.path.endsWith("/responses"))
    .flatMap((request) =>
      ((request.body as { tools?: { type?: string }[] }).tools ?? [])
        .map((tool) => tool.type ?? "")
        .filter((type) => type.startsWith("computer"))
    );
}

Deno.test({
  name:
    "the OpenAI Agents SDK's computer tool drives the guest book through the gateway",
  ignore: missing !== undefined,
  // Chromium and the SDK keep sockets and timers past a run's end.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using harness = await startHarness();

    await t.step(
      "computer-use-preview (the provider's name of operator) completes the form with the preview tool",
      async () => {
        harness.sim.clear();
        await using book = await openGuestBook();
        const { computer, output } = await runAgent(
          harness,
          book,
          "computer-use-preview",
          "lantern",
        );
        assert.ok(
          computer.done.length >= 4,
          `the computer did ${JSON.stringify(computer.done)}; the agent said ${
            JSON.stringify(output)
          }`,
        );
        await assertFormCompleted(book.server, "lantern");
        const tools = upstreamComputerTools(harness);
        assert.ok(tools.length > 0);
        assert.ok(tools.every((type) => type === "computer_use_preview"));
      },
    );

    await t.step(
      "a model listing the GA computer tool completes the form with batched actions",
      async () => {
        const model = (await computerUseModels(harness.url)).find((entry) =>
          entry.owned_by === "openai" && entry.routes.includes("responses") &&
          entry.computer_use?.tool === "computer"
        );
        assert.ok(
          model,
          'no OpenAI model in /v1/models lists computer_use.tool "computer"',
        );
        harness.sim.clear();
        await using book = await openGuestBook();
        const { computer, output } = await runAgent(
          harness,
          book,
          model.id,
          "harbor-7",
        );
        assert.ok(
          computer.done.length >= 4,
          `the computer did ${JSON.stringify(computer.done)}; the agent said ${
            JSON.stringify(output)
          }`,
        );
        await assertFormCompleted(book.server, "harbor-7");
        const tools = upstreamComputerTools(harness);
        assert.ok(tools.length > 0);
        assert.ok(tools.every((type) => type === "computer"));
        // The SDK sends the whole history back: the last turn shows a GA
        // computer_call whose batched actions the SDK carried out.
        const last = harness.sim.requests.findLast((request) =>
          request.path.endsWith("/responses")
        );
        const calls = ((last?.body as { input?: unknown[] }).input ?? [])
          .filter((item): item is { type: string; actions?: unknown[] } =>
            typeof item === "object" && item !== null &&
            (item as { type?: unknown }).type === "computer_call"
          );
        assert.ok(
          calls.some((call) => (call.actions?.length ?? 0) >= 2),
          `no batched computer_call in ${JSON.stringify(calls)}`,
        );
      },
    );

    await t.step(
      "operator gets the GA tool its upstream model refuses: the run fails, never a success with no action",
      async () => {
        harness.sim.clear();
        await using book = await openGuestBook();
        let outcome: { computer: PageComputer; output: unknown } | undefined;
        let failure: unknown;
        try {
          outcome = await runAgent(harness, book, "operator", "Quartz");
        } catch (error) {
          failure = error;
        }
        assert.equal(
          outcome,
          undefined,
          `the run succeeded saying ${JSON.stringify(outcome?.output)} after ${
            JSON.stringify(outcome?.computer.done)
          }`,
        );
        assert.ok(failure instanceof Error);
        assert.match(failure.message, /400/);
        assert.match(failure.message, /computer/);
        assert.deepEqual(upstreamComputerTools(harness), ["computer"]);
        assert.equal(
          await book.server.submission(book.server.run, 0),
          undefined,
        );
      },
    );
  },
});
