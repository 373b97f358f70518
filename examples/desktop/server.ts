/**
 * A computer-use evaluation environment on {@linkcode MCPServer}: a real
 * desktop (Xvfb, Chromium full screen on a page this environment serves),
 * the `computer`, `bash` and `edit` tools, and the scenario `fill_form`,
 * whose reward the page's own server decides.
 *
 * @example
 * ```ts ignore
 * import { startDesktop } from "./desktop.ts";
 * import { createDesktopServer } from "./server.ts";
 *
 * const desktop = await startDesktop({ size: { width: 1280, height: 800 } });
 * const { mcp } = createDesktopServer({ desktop, workspace: await Deno.makeTempDir() });
 * await mcp.run({ transport: "stdio" });
 * ```
 *
 * @module
 */
import { z } from "zod";
import { MCPServer, runIsolation } from "../../mcp/mod.ts";
import {
  BashTool,
  ComputerTool,
  EditTool,
  X11Executor,
} from "../../tools/mod.ts";
import type { Desktop } from "./desktop.ts";
import { elementCenter } from "./page_server.ts";

/** Options of {@linkcode createDesktopServer}. */
export interface DesktopServerOptions {
  /** The running desktop; the server's shutdown hook closes it. */
  desktop: Desktop;
  /** The directory `bash` starts in and `edit` is confined to. */
  workspace: string;
  /** How long a run's setup waits for the page to reload and report (ms, default 15 000). */
  pageTimeoutMs?: number;
  /** How long evaluation waits for a submission still on its way (ms, default 3 000). */
  submitWaitMs?: number;
}

/** The server and its tools, so tests and embedders can reach them. */
export interface DesktopEnvironment {
  /** The MCP server; `run()` it. */
  mcp: MCPServer;
  /** The `computer` tool (its `agentSize` is the client's display size). */
  computer: ComputerTool;
  /** The `bash` tool. */
  bash: BashTool;
  /** The `edit` tool. */
  edit: EditTool;
}

/** Words the prompt may ask for: letters, digits and hyphens, so the prompt's quoting holds. */
const WORD = /^[A-Za-z0-9-]{1,32}$/;

/**
 * Builds the environment on a running desktop. One desktop serves one run at
 * a time: a new run reloads the page. Concurrent runs need a process each
 * (over stdio every client has its own).
 *
 * @param options The desktop, the workspace and time limits.
 * @returns The server and its tools.
 */
export function createDesktopServer(
  options: DesktopServerOptions,
): DesktopEnvironment {
  const { desktop, workspace } = options;
  const pageTimeoutMs = options.pageTimeoutMs ?? 15_000;
  const submitWaitMs = options.submitWaitMs ?? 3_000;
  const { width, height } = desktop.xvfb.size;
  const mcp = new MCPServer({
    name: "desktop",
    version: "0.1.0",
    // One screen per process: concurrent runs need a process each.
    capabilities: runIsolation(false),
    instructions:
      `A ${width}x${height} desktop with Chromium open on a guest-book page. ` +
      "Use the `computer` tool to see the screen and act on it; coordinates are in " +
      "the screen size you were told.",
  });
  const computer = new ComputerTool({
    executor: new X11Executor({ display: desktop.xvfb.display }),
  });
  const bash = new BashTool({ cwd: workspace });
  const edit = new EditTool({ root: workspace });
  mcp.addTool(computer);
  mcp.addTool(bash);
  mcp.addTool(edit);

  // The agent's screen size comes with the initialize request's _meta.
  mcp.initialize((ctx) => {
    computer.configure(ctx.meta);
    const agent = computer.agentSize;
    console.error(
      `desktop: screen ${width}x${height} on ${desktop.xvfb.display}, agent ${agent.width}x${agent.height}`,
    );
  });

  mcp.shutdown(async () => {
    // The line a container's log keeps of a clean stop (`docker stop`).
    console.error(
      "desktop: shutting down: closing the shell, Chromium and Xvfb",
    );
    await bash.close();
    await desktop.close();
  });

  mcp.scenario({
    name: "fill_form",
    description:
      "Click the page's text box, type the word, press Enter; reward 1 when the page submitted that word.",
    input: {
      word: z.string().regex(WORD, "letters, digits and hyphens, 1 to 32")
        .default("lantern").describe("The word to submit"),
    },
    // A GUI task: with a shell the agent could post the form without the page.
    excludeTools: ["bash", "edit"],
  }, async function* ({ word }) {
    const gone = () =>
      new Error(
        "Chromium is no longer running (an earlier run closed it): restart the environment",
      );
    if (!desktop.chromiumRunning) throw gone();
    // Chromium may have been closed a moment ago and not yet reaped: the
    // page's report would only time out, so its end answers first.
    const { run, layout } = await Promise.race([
      desktop.page.startRun(pageTimeoutMs),
      desktop.chromiumEnded.then(() => Promise.reject(gone())),
    ]);
    const box = await computer.toAgent(elementCenter(layout, "word"));
    const agent = computer.agentSize;
    yield `The screen is ${agent.width}x${agent.height}. ` +
      `Click the text box at (${box.x}, ${box.y}), type "${word}", then press Enter.`;
    const submitted = await desktop.page.submission(run, submitWaitMs);
    const right = submitted === word;
    yield {
      reward: right ? 1 : 0,
      done: true,
      content: submitted === undefined
        ? "The page was not submitted"
        : right
        ? `The page submitted "${word}"`
        : `The page submitted ${JSON.stringify(submitted)}, not "${word}"`,
      info: { expected: word, submitted: submitted ?? null, run },
    };
  });

  mcp.resource("desktop://status", {
    name: "status",
    description:
      "The desktop: screen and agent sizes, display, current run, process ids.",
  }, () => ({
    screen: desktop.xvfb.size,
    agent: computer.agentSize,
    display: desktop.xvfb.display,
    run: desktop.page.run,
    page: desktop.page.url,
    processes: { xvfb: desktop.xvfb.pid, chromium: desktop.chromiumPid },
  }));

  return { mcp, computer, bash, edit };
}
