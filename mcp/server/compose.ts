/**
 * Composing servers (`MCPServer.mount(server, prefix)`, FastMCP's `mount`):
 * the child's tools, resources and prompts copied onto the parent under a
 * prefix, and copied again whenever the child's lists change; the child's
 * initialize and shutdown hooks run with the parent's.
 *
 * @module
 */
import {
  type Implementation,
  type McpServer,
  type RegisteredPrompt,
  type RegisteredResource,
  type RegisteredResourceTemplate,
  type RegisteredTool,
  ResourceTemplate,
  type ServerContext,
} from "../_sdk.ts";
import { registryOf } from "../_sdk_internals.ts";
import { LenientUriTemplate } from "../primitives/resource.ts";
import type { InitializeHooks } from "./initialize.ts";
import { runShutdownHooks, type ShutdownHook } from "./signals.ts";

/** A server that can be mounted: what its parent reads of it. */
export interface Mountable extends McpServer {
  /** Name and version, for errors. */
  readonly info: Implementation;
  /** How long its shutdown hooks may take (ms). */
  readonly shutdownTimeoutMs: number;
  /** Calls `listener` whenever its tool, resource or prompt list changes. */
  onListChanged(listener: () => void): () => void;
}

/** A server's hooks, which a server it is mounted on runs with its own. */
export interface ServerHooks {
  /** Its initialize hooks. */
  readonly initialize: InitializeHooks;
  /** Its shutdown hooks (the live list: hooks added later count). */
  readonly shutdown: readonly ShutdownHook[];
}

/** The servers mounted on one parent. */
export class Compositions {
  readonly #parent: Mountable;
  readonly #hooks: { initialize: InitializeHooks; shutdown: ShutdownHook[] };
  readonly #mounted = new Map<McpServer, Composition>();

  /**
   * Creates an empty set.
   *
   * @param parent The server mounted on.
   * @param hooks The parent's hooks, which gain each child's.
   */
  constructor(
    parent: Mountable,
    hooks: { initialize: InitializeHooks; shutdown: ShutdownHook[] },
  ) {
    this.#parent = parent;
    this.#hooks = hooks;
  }

  /**
   * Copies the child's lists onto the parent, again on each of its changes,
   * and adopts its hooks.
   *
   * @param child The server to mount.
   * @param hooks The child's hooks.
   * @param prefix Name prefix; without one, names are kept.
   * @throws {Error} When the child is the parent or is already mounted.
   */
  mount(child: Mountable, hooks: ServerHooks, prefix?: string): void {
    if (child === this.#parent) {
      throw new Error(
        `Cannot mount server "${this.#parent.info.name}" on itself`,
      );
    }
    if (this.#mounted.has(child)) {
      throw new Error(`Server "${child.info.name}" is already mounted`);
    }
    const composition: Composition = {
      prefix,
      tools: [],
      resources: [],
      prompts: [],
    };
    this.#mounted.set(child, composition);
    syncComposition(this.#parent, child, composition);
    child.onListChanged(() =>
      syncComposition(this.#parent, child, composition)
    );
    this.#hooks.initialize.add((ctx) => hooks.initialize.run(ctx));
    this.#hooks.shutdown.push(() =>
      runShutdownHooks(hooks.shutdown, child.shutdownTimeoutMs).then(() => {})
    );
  }
}

/** What a mount copied onto the parent, removed before each re-sync. */
interface Composition {
  /** Tools and prompts are named `{prefix}_{name}`; resources `scheme://{prefix}/…`. */
  prefix?: string;
  /** The copied tools. */
  tools: RegisteredTool[];
  /** The copied resources and templates. */
  resources: Array<RegisteredResource | RegisteredResourceTemplate>;
  /** The copied prompts. */
  prompts: RegisteredPrompt[];
}

/**
 * Replaces the parent's copies of the child's enabled tools, resources,
 * templates and prompts with fresh ones.
 *
 * @param parent The server mounted on.
 * @param child The mounted server.
 * @param composition What the last sync copied; updated in place.
 */
function syncComposition(
  parent: McpServer,
  child: McpServer,
  composition: Composition,
): void {
  for (
    const copy of [
      ...composition.tools,
      ...composition.resources,
      ...composition.prompts,
    ]
  ) copy.remove();
  const { prefix } = composition;
  const name = (original: string) =>
    prefix ? `${prefix}_${original}` : original;
  const uri = (original: string) =>
    prefix
      ? original.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)/, `$1${prefix}/`)
      : original;
  const registry = registryOf(child);
  const register = parent.registerTool as (
    name: string,
    config: object,
    cb: unknown,
  ) => RegisteredTool;
  composition.tools = enabled(registry._registeredTools).map((
    [toolName, tool],
  ) =>
    register.call(parent, name(toolName), {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: tool.outputSchema,
      annotations: tool.annotations,
      _meta: tool._meta,
    }, tool.handler)
  );
  const resources = enabled(registry._registeredResources).map((
    [resourceUri, resource],
  ) =>
    parent.registerResource(
      resource.name,
      uri(resourceUri),
      { ...resource.metadata, title: resource.title },
      resource.readCallback,
    )
  );
  const templates = enabled(registry._registeredResourceTemplates).map((
    [templateName, template],
  ) =>
    parent.registerResource(
      name(templateName),
      new ResourceTemplate(
        new LenientUriTemplate(
          uri(template.resourceTemplate.uriTemplate.toString()),
        ),
        {
          list: template.resourceTemplate.listCallback,
        },
      ),
      { ...template.metadata, title: template.title },
      template.readCallback,
    )
  );
  composition.resources = [...resources, ...templates];
  const registerPrompt = parent.registerPrompt as (
    name: string,
    config: object,
    cb: unknown,
  ) => RegisteredPrompt;
  composition.prompts = enabled(registry._registeredPrompts).map((
    [promptName, prompt],
  ) =>
    registerPrompt.call(
      parent,
      name(promptName),
      {
        title: prompt.title,
        description: prompt.description,
        argsSchema: prompt.argsSchema,
      },
      prompt.argsSchema
        // The copy validates the arguments; the original again, harmlessly.
        ? (args: Record<string, unknown>, ctx: ServerContext) =>
          prompt.handler(args, ctx)
        : (ctx: ServerContext) => prompt.handler(undefined, ctx),
    )
  );
}

/** The entries of a registry that are enabled. */
function enabled<T extends { enabled: boolean }>(
  registered: Record<string, T>,
): [string, T][] {
  return Object.entries(registered).filter(([, item]) => item.enabled);
}
