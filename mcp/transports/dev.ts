/**
 * Development endpoints (`/dev/...`) served beside the HTTP and SSE
 * transports: list tools, resources and prompts, and call a tool with a plain
 * POST. They talk to the server through an in-process SDK `Client`, so they
 * see exactly what an MCP client sees, initialize hooks included.
 *
 * @module
 */
import { Hono } from "hono";
import type { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport } from "../_sdk.ts";
import type { Implementation, McpServer } from "../_sdk.ts";
import type { BaseHub } from "../primitives/hub.ts";
import type { JsonSchema } from "../primitives/_schema.ts";

/** What the dev endpoints need from the server. */
export interface DevSource {
  /** Server name and version. */
  readonly info: Implementation;
  /** The transport being served. */
  readonly transport: "http" | "sse";
  /** The mounted hubs. */
  readonly hubs: readonly BaseHub[];
  /** A new protocol instance over the server's registry. */
  createInstance(): McpServer;
}

/** One entry of `GET /dev/tools`. */
export interface DevTool {
  /** Tool name (inside its hub for hub tools). */
  name: string;
  /** What the tool does. */
  description?: string;
  /** JSON Schema of the arguments. */
  input_schema: JsonSchema;
  /** JSON Schema of the structured result, if declared. */
  output_schema?: JsonSchema;
  /** The hub the tool belongs to, for hub tools. */
  hub?: string;
}

/** A lazily connected in-process client, reconnected after a failed connect. */
export class DevClient {
  readonly #source: DevSource;
  #client: Promise<Client> | undefined;

  /**
   * Creates the (not yet connected) client.
   *
   * @param source The server to talk to.
   */
  constructor(source: DevSource) {
    this.#source = source;
  }

  /**
   * Returns the connected client, connecting on first use.
   *
   * @returns The SDK client.
   */
  get(): Promise<Client> {
    this.#client ??= this.#connect().catch((error) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  async #connect(): Promise<Client> {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await this.#source.createInstance().connect(serverSide);
    // Loaded on first use: servers that never serve /dev skip the client SDK.
    const { Client } = await import("@modelcontextprotocol/client");
    const client = new Client({
      name: "mcpkit-dev",
      version: this.#source.info.version,
    });
    await client.connect(clientSide);
    return client;
  }

  /** Closes the client if it was connected. */
  async close(): Promise<void> {
    const client = await this.#client?.catch(() => undefined);
    this.#client = undefined;
    await client?.close();
  }
}

/**
 * Builds the `/dev` routes, to be mounted at the server root.
 *
 * @param source The server to describe.
 * @param client The in-process client the routes use.
 * @returns A Hono app with the dev routes.
 */
export function devRoutes(source: DevSource, client: DevClient): Hono {
  const app = new Hono();
  const server = source.info.name;

  app.get("/dev", (c) => {
    const base = new URL(c.req.url).origin;
    return c.json({
      name: source.info.name,
      version: source.info.version,
      transport: source.transport,
      endpoints: {
        tools: `${base}/dev/tools`,
        resources: `${base}/dev/resources`,
        prompts: `${base}/dev/prompts`,
      },
    });
  });

  app.get("/dev/tools", async (c) => {
    const { tools } = await (await client.get()).listTools();
    const listed: DevTool[] = tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.inputSchema,
      ...(tool.outputSchema && { output_schema: tool.outputSchema }),
    }));
    for (const hub of source.hubs) {
      for (const fn of hub.functions()) listed.push({ ...fn, hub: hub.name });
    }
    return c.json({ server, tools: listed, count: listed.length });
  });

  app.get("/dev/resources", async (c) => {
    const connected = await client.get();
    const { resources } = await connected.listResources();
    const { resourceTemplates } = await connected.listResourceTemplates();
    const listed = [
      ...resources.map((r) => ({
        uri: r.uri,
        name: r.name,
        description: r.description,
        mimeType: r.mimeType,
      })),
      ...resourceTemplates.map((r) => ({
        uri: r.uriTemplate,
        name: r.name,
        description: r.description,
        mimeType: r.mimeType,
        template: true,
      })),
    ];
    return c.json({ server, resources: listed, count: listed.length });
  });

  app.get("/dev/prompts", async (c) => {
    const { prompts } = await (await client.get()).listPrompts();
    const listed = prompts.map((p) => ({
      name: p.name,
      description: p.description,
      arguments: p.arguments ?? [],
    }));
    return c.json({ server, prompts: listed, count: listed.length });
  });

  // `{name{.+}}` takes `hub/tool` as a path with a slash; Hono also decodes `hub%2Ftool`.
  app.post("/dev/tools/:name{.+}", async (c) => {
    const name = c.req.param("name");
    const text = await c.req.text();
    let args: unknown = {};
    try {
      if (text.trim() !== "") args = JSON.parse(text);
    } catch {
      return c.json(
        { error: `Cannot parse the body of "${name}" as JSON` },
        400,
      );
    }
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      return c.json(
        { error: `Arguments of "${name}" must be a JSON object` },
        400,
      );
    }
    // Connect first: the initialize hooks may be what mounts the hubs.
    const connected = await client.get();
    const slash = name.indexOf("/");
    const hub = slash > 0
      ? source.hubs.find((h) => h.name === name.slice(0, slash))
      : undefined;
    const call = hub
      ? {
        name: hub.name,
        arguments: {
          name: name.slice(slash + 1),
          arguments: args as Record<string, unknown>,
        },
      }
      : { name, arguments: args as Record<string, unknown> };
    try {
      return c.json(await connected.callTool(call));
    } catch (error) {
      return c.json({
        error: error instanceof Error ? error.message : String(error),
      }, 500);
    }
  });

  return app;
}
