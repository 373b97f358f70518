/**
 * The `mcp` capability's daemon: the server's Streamable HTTP endpoint on a
 * loopback port of its own, reached only through the control port's
 * tunnel, with what the control channel adds to each request (the held
 * task's run id, the harness's display size, no scenario call into a task).
 *
 * @module
 */
import type { SessionHost } from "../transports/stdio.ts";
import { createHttpApp, MAX_BODY_BYTES } from "../transports/http.ts";
import { SUBMIT_TOOL } from "../scenarios/wire.ts";
import { type DisplayRequest, displayRequest } from "./display.ts";

/**
 * The `mcp` capability's daemon: Streamable HTTP at `/mcp` on a loopback
 * port, without the dev endpoints (they would call hub tools, harness-only
 * ones included, for whoever reaches the tunnel). A request without
 * `_meta.run_id` while exactly one task is held gets that task's session id
 * as its run id, so a harness that sends none (HUD's own) reaches the task's
 * per-run state. A scenario call (`prompts/get`, `resources/read`,
 * `_hud_submit`) for a run that is a task of the channel is refused: the
 * task is set up and graded on the channel only, so no client of the
 * capability can set up its own version of a live task under the agent.
 *
 * @param host The server.
 * @param tasks The channel's held tasks, and where a display size goes.
 * @returns Its port, and how to drain and close it.
 */
export function startToolsEndpoint(
  host: SessionHost,
  tasks: {
    soleTask: () => string | undefined;
    holds: (id: string) => boolean;
    display: (request: DisplayRequest) => void;
  },
): { port: number; drain(): void; close(): Promise<void> } {
  const http = createHttpApp(host, "http", "127.0.0.1");
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      // Harnesses reach the capability through the control port's tunnel
      // and send no Origin; a browser always does. A page open in the
      // environment's own browser (on loopback, where the agent may drive
      // it) must not call the tools, excluded ones included, behind the
      // runner's back.
      if (request.headers.has("origin")) {
        return Response.json({
          error:
            "The mcp capability does not answer browser pages (a request with an Origin header)",
        }, { status: 403 });
      }
      if (new URL(request.url).pathname !== "/mcp") {
        return Response.json(
          { error: "Not found: the mcp capability serves /mcp" },
          { status: 404 },
        );
      }
      const routed = await withRunId(request, tasks.soleTask());
      if (routed.display) {
        try {
          tasks.display(routed.display);
        } catch (error) {
          return Response.json({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32602, message: (error as Error).message },
          }, { status: 400 });
        }
      }
      if (routed.scenarioRuns.some(tasks.holds)) {
        return Response.json({
          jsonrpc: "2.0",
          id: null,
          error: {
            code: -32600,
            message:
              "This run is a task of the control channel: its prompt, answer and grade go through tasks.start and tasks.grade only",
          },
        }, { status: 403 });
      }
      return http.app.fetch(routed.request);
    },
  );
  return {
    port: server.addr.port,
    drain: () => http.drain(),
    close: async () => {
      await http.close();
      await server.shutdown();
    },
  };
}

/** Scenario methods: each sets up, answers or grades a run. */
function isScenarioCall(method: string, params: Record<string, unknown>) {
  return method === "prompts/get" || method === "resources/read" ||
    (method === "tools/call" && params.name === SUBMIT_TOOL);
}

/**
 * The request, with `run` as `_meta.run_id` of each message that has none,
 * the run ids its scenario calls name, and the display size its `_meta`
 * asks for (as an MCP client sends it).
 */
async function withRunId(
  request: Request,
  run: string | undefined,
): Promise<
  { request: Request; scenarioRuns: string[]; display?: DisplayRequest }
> {
  const length = Number(request.headers.get("content-length") ?? NaN);
  if (
    request.method !== "POST" || !(length > 0 && length <= MAX_BODY_BYTES)
  ) return { request, scenarioRuns: [] };
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {
      request: new Request(request, { body: text }),
      scenarioRuns: [],
    };
  }
  const scenarioRuns: string[] = [];
  let display: DisplayRequest | undefined;
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== "object" || message === null) continue;
    const method = (message as { method?: unknown }).method;
    if (typeof method !== "string") continue;
    const params = (message as { params?: Record<string, unknown> }).params ??=
      {};
    if (typeof params !== "object" || params === null) continue;
    const meta = (params._meta ??= {}) as Record<string, unknown>;
    if (typeof meta !== "object" || meta === null) continue;
    display ??= displayRequest(meta);
    if (meta.run_id === undefined && run !== undefined) meta.run_id = run;
    if (isScenarioCall(method, params) && typeof meta.run_id === "string") {
      scenarioRuns.push(meta.run_id);
    }
  }
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  return {
    request: new Request(request.url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    }),
    scenarioRuns,
    display,
  };
}
