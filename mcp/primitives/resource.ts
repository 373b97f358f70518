/**
 * Resource helpers: options, result normalisation and URI-template matching
 * for `MCPServer.resource(uri, fn)`.
 *
 * @module
 */
import {
  type McpServer,
  type ReadResourceResult,
  type ResourceMetadata,
  ResourceTemplate,
  type ServerContext,
  UriTemplate,
  type Variables,
} from "../_sdk.ts";
import { type ToolExtra, toolExtra } from "./tool.ts";

/** Options of `MCPServer.resource(uri, options, fn)`. */
export interface ResourceOptions {
  /** Resource name; defaults to the function's name, else the URI. */
  name?: string;
  /** Human-readable title. */
  title?: string;
  /** What the resource holds. */
  description?: string;
  /** MIME type; defaults to `application/json` for serialised values, `text/plain` for strings. */
  mimeType?: string;
}

/** What a resource function receives beside the template variables. */
export interface ResourceContext {
  /** The URI the client read. */
  uri: URL;
  /** The SDK's request context. */
  extra: ToolExtra;
}

/** A resource function: template variables in (empty for a fixed URI), any value out. */
export type ResourceFunction = (
  variables: Record<string, string>,
  ctx: ResourceContext,
) => unknown;

/**
 * Turns what a resource function returned into a `ReadResourceResult`: a
 * resource result (`{contents: [...]}`) passes through, a string becomes text,
 * bytes become a blob, anything else is JSON-serialised.
 *
 * @param uri The URI that was read.
 * @param value What the function returned.
 * @param mimeType The declared MIME type, if any.
 * @returns The result to send to the client.
 */
export function normalizeResourceResult(
  uri: URL,
  value: unknown,
  mimeType?: string,
): ReadResourceResult {
  if (isResourceResult(value)) return value;
  const href = uri.href;
  if (typeof value === "string") {
    return {
      contents: [{
        uri: href,
        mimeType: mimeType ?? "text/plain",
        text: value,
      }],
    };
  }
  if (value instanceof Uint8Array) {
    const blob = btoa(
      Array.from(value, (byte) => String.fromCharCode(byte)).join(""),
    );
    return {
      contents: [{
        uri: href,
        mimeType: mimeType ?? "application/octet-stream",
        blob,
      }],
    };
  }
  const text = JSON.stringify(value ?? null, null, 2);
  return {
    contents: [{ uri: href, mimeType: mimeType ?? "application/json", text }],
  };
}

function isResourceResult(value: unknown): value is ReadResourceResult {
  return typeof value === "object" && value !== null &&
    Array.isArray((value as { contents?: unknown }).contents);
}

/**
 * A URI template that also matches values containing `/` and URIs that
 * `new URL()` normalised. The SDK reads `file://notes.txt` as
 * `file://notes.txt/` and its `{path}` stops at slashes, so `file://{path}`
 * would match almost nothing a client sends; this matcher falls back to
 * "each variable takes any non-empty text" on the URI with and without the
 * trailing slash.
 */
export class LenientUriTemplate extends UriTemplate {
  readonly #pattern: RegExp;
  readonly #names: string[];
  readonly #template: string;

  /**
   * Compiles the template.
   *
   * @param template An RFC 6570 template such as `file://{path}`.
   */
  constructor(template: string) {
    super(template);
    this.#template = template;
    this.#names = [];
    let source = "";
    let last = 0;
    for (const match of template.matchAll(/\{([^}]+)\}/g)) {
      source += escapeRegExp(template.slice(last, match.index));
      const names = match[1].replace(/^[+#./;?&]/, "").split(",").map((name) =>
        name.replace(/\*$/, "")
      );
      this.#names.push(...names);
      source += names.map(() => "(.+?)").join(",");
      last = match.index + match[0].length;
    }
    source += escapeRegExp(template.slice(last));
    this.#pattern = new RegExp(`^${source}$`);
  }

  /**
   * Matches a URI against the template.
   *
   * @param uri The URI to match.
   * @returns The variables, or null.
   */
  override match(uri: string): Variables | null {
    const strict = super.match(uri);
    if (strict) return strict;
    // `new URL()` adds a trailing slash to a bare host; try without it first.
    const candidates = uri.endsWith("/") && !this.#template.endsWith("/")
      ? [uri.slice(0, -1), uri]
      : [uri];
    for (const candidate of candidates) {
      const found = this.#pattern.exec(candidate);
      if (found) {
        return Object.fromEntries(
          this.#names.map((
            name,
            i,
          ) => [name, decodeURIComponent(found[i + 1])]),
        );
      }
    }
    return null;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Reads `MCPServer.resource()`'s arguments, `(uri, fn)` or
 * `(uri, options, fn)`.
 *
 * @param args The arguments as given.
 * @returns The URI, the options (empty without them) and the function.
 * @throws {TypeError} When they are neither form.
 */
export function resourceArguments(
  args: unknown[],
): { uri: string; options: ResourceOptions; fn: ResourceFunction } {
  const [uri, second, third] = args;
  const options =
    (typeof second === "function" ? {} : second) as ResourceOptions;
  const fn =
    (typeof second === "function" ? second : third) as ResourceFunction;
  if (typeof uri !== "string" || typeof fn !== "function") {
    throw new TypeError(
      "Cannot register resource: expected resource(uri, fn) or resource(uri, options, fn)",
    );
  }
  return { uri, options, fn };
}

/**
 * Registers `fn` as the resource (or, with `{variables}` in the URI, the
 * resource template) `uri` on `server`: what `MCPServer.resource()` does.
 *
 * @param server The server.
 * @param uri The URI or URI template.
 * @param options Name, title, description, MIME type.
 * @param fn The function that produces the content.
 */
export function registerResourceFunction(
  server: McpServer,
  uri: string,
  options: ResourceOptions,
  fn: ResourceFunction,
): void {
  const name = options.name ?? (fn.name || uri);
  const metadata: ResourceMetadata = {
    title: options.title,
    description: options.description,
    mimeType: options.mimeType ?? "application/json",
  };
  const read = async (
    url: URL,
    variables: Record<string, string>,
    ctx: ServerContext,
  ) =>
    normalizeResourceResult(
      url,
      await fn(variables, { uri: url, extra: toolExtra(ctx) }),
      options.mimeType,
    );
  if (uri.includes("{")) {
    const template = new ResourceTemplate(new LenientUriTemplate(uri), {
      list: undefined,
    });
    server.registerResource(name, template, metadata, (url, variables, ctx) => {
      const flat = Object.fromEntries(
        Object.entries(variables).map((
          [key, value],
        ) => [key, Array.isArray(value) ? value.join(",") : value]),
      );
      return read(url, flat, ctx);
    });
  } else {
    server.registerResource(
      name,
      uri,
      metadata,
      (url, ctx) => read(url, {}, ctx),
    );
  }
}
