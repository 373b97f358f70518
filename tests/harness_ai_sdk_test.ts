/**
 * The AI SDK (`ai` with `@ai-sdk/anthropic`) as a computer-use harness,
 * through the gateway to the built-in simulator: for each Anthropic computer
 * tool the SDK has (the GA toolset `computer_toolset_20260801`,
 * `computer_20251124`, `computer_20250124`), whole (`generateText`) and
 * streamed (`streamText`), a model whose `/v1/models`
 * entry lists that tool drives a real headless Chromium on the desktop
 * example's guest-book page through the tool's `execute`, and the page must
 * submit the word after a real click on its box. The model is chosen from
 * `/v1/models`, never by name. Skipped, saying so, without Chromium.
 *
 * @module
 */
import assert from "node:assert/strict";
import { generateText, stepCountIs, streamText } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import type { Page } from "playwright-core";
import { startHarness } from "./_gateway_harness.ts";
import {
  assertFormCompleted,
  chromiumMissing,
  computerUseModels,
  formInstruction,
  openGuestBook,
  playwrightKeys,
  VIEWPORT,
} from "./_harness_page.ts";

const missing = chromiumMissing();
if (missing) console.warn(`AI SDK harness test skipped: ${missing}`);

/** The most steps one run may take: the plan is a screenshot, a click, typing, Enter, then the answer. */
const MAX_STEPS = 12;
/** How long one run may take: a stuck exchange fails its step, not the whole suite's time. */
const RUN_TIMEOUT_MS = 60_000;

/** The input `execute` receives from every Anthropic computer tool version. */
interface ComputerInput {
  action: string;
  coordinate?: [number, number] | number[];
  text?: string;
}

/** What `execute` returns: a screenshot, or a line saying what was done. */
type ComputerOutput = { type: "image"; data: string } | string;

/**
 * Carries out one computer action on the page, as a harness's `execute`
 * would; only what the guest book needs is implemented, anything else is
 * reported back to the model as not done.
 */
async function perform(
  page: Page,
  input: ComputerInput,
  done: string[],
): Promise<ComputerOutput> {
  const [x, y] = input.coordinate ?? [];
  switch (input.action) {
    case "screenshot": {
      const png = await page.screenshot({ type: "png" });
      done.push("screenshot");
      return { type: "image", data: png.toString("base64") };
    }
    case "left_click":
    case "double_click":
      assert.ok(x !== undefined && y !== undefined, "a click needs x and y");
      await page.mouse.click(x, y, {
        clickCount: input.action === "double_click" ? 2 : 1,
      });
      done.push(`${input.action} ${x},${y}`);
      return `clicked (${x}, ${y})`;
    case "type":
      await page.keyboard.type(input.text ?? "");
      done.push(`type ${input.text}`);
      return `typed "${input.text}"`;
    case "key":
      await page.keyboard.press(playwrightKeys((input.text ?? "").split("+")));
      done.push(`key ${input.text}`);
      return `pressed ${input.text}`;
    default:
      return `the action "${input.action}" is not available here`;
  }
}

/**
 * The SDK's tool for a computer tool type, with `execute` driving `page`.
 * The table is of tool types (what the catalog says a model takes), not of
 * model names.
 */
function computerTool(
  anthropic: ReturnType<typeof createAnthropic>,
  type: string,
  page: Page,
  done: string[],
) {
  // The SDK starts every tool call of a turn at once, and the toolset sends
  // several per turn (click, type, Enter): run them one after another, in the
  // order the model gave them, as Anthropic's docs ask.
  let queue: Promise<unknown> = Promise.resolve();
  const execute = (input: ComputerInput) => {
    const next = queue.then(() => perform(page, input, done));
    queue = next.catch(() => {});
    return next;
  };
  const toModelOutput = ({ output }: { output: ComputerOutput }) =>
    typeof output === "string"
      ? {
        type: "content" as const,
        value: [{ type: "text" as const, text: output }],
      }
      : {
        type: "content" as const,
        value: [{
          type: "file" as const,
          data: { type: "data" as const, data: output.data },
          mediaType: "image/png",
        }],
      };
  const display = {
    displayWidthPx: VIEWPORT.width,
    displayHeightPx: VIEWPORT.height,
  };
  switch (type) {
    case "computer_toolset_20260801":
      return anthropic.tools.computerToolset_20260801({
        execute,
        toModelOutput,
      });
    case "computer_20251124":
      return anthropic.tools.computer_20251124({
        ...display,
        execute,
        toModelOutput,
      });
    case "computer_20250124":
      return anthropic.tools.computer_20250124({
        ...display,
        execute,
        toModelOutput,
      });
    default:
      throw new Error(`The AI SDK has no computer tool "${type}"`);
  }
}

/** The tool types the AI SDK's Anthropic provider can send, newest first. */
const TOOL_TYPES = [
  "computer_toolset_20260801",
  "computer_20251124",
  "computer_20250124",
] as const;

Deno.test({
  name:
    "the AI SDK's Anthropic computer tools complete the guest-book form through the gateway",
  ignore: missing !== undefined,
  // Chromium and the SDKs keep sockets and timers past a run's end.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using harness = await startHarness();
    const models = await computerUseModels(harness.url);
    const anthropic = createAnthropic({
      baseURL: `${harness.url}/v1`,
      apiKey: harness.caller.key,
    });
    for (
      const [type, streamed] of TOOL_TYPES.flatMap((type) =>
        [false, true].map((streamed) => [type, streamed] as const)
      )
    ) {
      const model = models.find((entry) =>
        entry.owned_by === "anthropic" && entry.routes.includes("messages") &&
        entry.computer_use?.tool === type
      );
      await t.step(
        `${type} (${model?.id ?? "no model lists it"}), ${
          streamed ? "streamText" : "generateText"
        }`,
        async () => {
          assert.ok(
            model,
            `no Anthropic model in /v1/models lists computer_use.tool "${type}"`,
          );
          harness.sim.clear();
          await using book = await openGuestBook();
          const word = `lantern-${type.slice(-4)}${streamed ? "-s" : ""}`;
          const done: string[] = [];
          const call = {
            model: anthropic(model.id),
            tools: { computer: computerTool(anthropic, type, book.page, done) },
            prompt: formInstruction(book.layout, word),
            stopWhen: stepCountIs(MAX_STEPS),
            abortSignal: AbortSignal.timeout(RUN_TIMEOUT_MS),
          };
          const text = streamed
            ? await streamText(call).text
            : (await generateText(call)).text;
          assert.ok(
            done.length >= 4,
            `expected a screenshot, a click, typing and Enter; the harness did ${
              JSON.stringify(done)
            } and the model said "${text}"`,
          );
          await assertFormCompleted(book.server, word);
          // Upstream, every turn carried the tool and beta the catalog lists.
          const sent = harness.sim.requests.filter((request) =>
            request.provider === "anthropic"
          );
          assert.ok(sent.length >= 2, "the simulator saw no Anthropic turns");
          for (const request of sent) {
            const tools = (request.body as { tools?: { type?: string }[] })
              .tools ?? [];
            assert.deepEqual(tools.map((tool) => tool.type), [type]);
            assert.equal(
              (request.body as { stream?: boolean }).stream === true,
              streamed,
            );
            const betas = request.headers["anthropic-beta"]?.split(",") ?? [];
            const beta = model.computer_use?.beta;
            if (beta) assert.ok(betas.includes(beta), `no beta "${beta}"`);
            else assert.ok(!betas.some((b) => b.startsWith("computer-use")));
          }
        },
      );
    }
  },
});
