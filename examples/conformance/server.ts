/**
 * An MCP server, built on {@linkcode MCPServer}, that implements every tool,
 * resource and prompt the official MCP conformance suite
 * (`npm:@modelcontextprotocol/conformance`, `server` scenarios) calls. The
 * expected names and results come from the suite's scenario descriptions;
 * `README.md` lists them.
 *
 * @module
 */
import { z } from "zod";
import {
  type CallToolResult,
  completable,
  type ElicitRequestFormParams,
  type GetPromptResult,
} from "@modelcontextprotocol/server";
import { MCPServer, type ToolExtra } from "../../mcp/mod.ts";
import { registerModernFixtures, requestStateCodec } from "./modern.ts";

/** A 1×1 PNG (one red pixel), base64. */
export const RED_PIXEL_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/**
 * A short silent WAV file (8 kHz, 8-bit mono, 80 samples), base64.
 *
 * @returns The base64 text of the file.
 */
export function silentWav(): string {
  const samples = 80;
  const bytes = new Uint8Array(44 + samples);
  const view = new DataView(bytes.buffer);
  const ascii = (offset: number, text: string) =>
    [...text].forEach((char, i) =>
      view.setUint8(offset + i, char.charCodeAt(0))
    );
  ascii(0, "RIFF");
  view.setUint32(4, 36 + samples, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  view.setUint32(16, 16, true); // fmt chunk size
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, 8000, true); // sample rate
  view.setUint32(28, 8000, true); // byte rate
  view.setUint16(32, 1, true); // block align
  view.setUint16(34, 8, true); // bits per sample
  ascii(36, "data");
  view.setUint32(40, samples, true);
  bytes.fill(128, 44); // 8-bit PCM silence is the midpoint
  return btoa(String.fromCharCode(...bytes));
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function text(value: string): CallToolResult {
  return { content: [{ type: "text", text: value }] };
}

/** Sends a log message to the session that made the request. */
function log(extra: ToolExtra, data: string): Promise<void> {
  return extra.sendNotification({
    method: "notifications/message",
    params: { level: "info", logger: "conformance", data },
  });
}

/** Asks the requesting client to fill in a form (`elicitation/create`). */
async function elicit(
  extra: ToolExtra,
  params: ElicitRequestFormParams,
): Promise<CallToolResult> {
  const result = await extra.mcpReq.elicitInput(params);
  return text(
    `Elicitation completed: action=${result.action}, content=${
      JSON.stringify(result.content ?? {})
    }`,
  );
}

function registerTools(mcp: MCPServer): void {
  mcp.tool({
    name: "test_simple_text",
    description: "Returns a simple text response",
  }, () => text("This is a simple text response for testing."));

  mcp.tool({
    name: "test_image_content",
    description: "Returns a 1x1 PNG image",
  }, () => [{ type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" }]);

  mcp.tool({
    name: "test_audio_content",
    description: "Returns a short silent WAV file",
  }, () => [{ type: "audio", data: silentWav(), mimeType: "audio/wav" }]);

  mcp.tool({
    name: "test_embedded_resource",
    description: "Returns an embedded text resource",
  }, () => [{
    type: "resource",
    resource: {
      uri: "test://embedded-resource",
      mimeType: "text/plain",
      text: "This is an embedded resource content.",
    },
  }]);

  mcp.tool({
    name: "test_multiple_content_types",
    description: "Returns text, an image and an embedded resource",
  }, () => [
    { type: "text", text: "Multiple content types test:" },
    { type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" },
    {
      type: "resource",
      resource: {
        uri: "test://mixed-content-resource",
        mimeType: "application/json",
        text: JSON.stringify({ test: "data", value: 123 }),
      },
    },
  ]);

  mcp.tool({
    name: "test_tool_with_logging",
    description: "Sends three info log messages while it runs",
  }, async (_args, extra) => {
    await log(extra, "Tool execution started");
    await delay(50);
    await log(extra, "Tool processing data");
    await delay(50);
    await log(extra, "Tool execution completed");
    return text("Tool with logging executed successfully");
  });

  mcp.tool({
    name: "test_tool_with_progress",
    description: "Reports progress 0, 50 and 100 out of 100",
  }, async (_args, extra) => {
    const progressToken = extra._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress, total: 100 },
        });
      }
      if (progress < 100) await delay(50);
    }
    return text("Tool with progress executed successfully");
  });

  mcp.tool({
    name: "test_error_handling",
    description: "Always fails",
  }, () => {
    throw new Error("This tool intentionally returns an error for testing");
  });

  mcp.tool({
    name: "test_sampling",
    description: "Asks the client's LLM to answer a prompt",
    input: { prompt: z.string().describe("The prompt to send to the LLM") },
  }, async ({ prompt }, extra) => {
    const result = await extra.mcpReq.requestSampling({
      messages: [{ role: "user", content: { type: "text", text: prompt } }],
      maxTokens: 100,
    });
    const content = Array.isArray(result.content)
      ? result.content[0]
      : result.content;
    const answer = content?.type === "text"
      ? content.text
      : JSON.stringify(result.content);
    return text(`LLM response: ${answer}`);
  });

  mcp.tool({
    name: "test_elicitation",
    description: "Asks the user for a username and an email address",
    input: { message: z.string().describe("The message to show the user") },
  }, async ({ message }, extra) => {
    const result = await extra.mcpReq.elicitInput({
      message,
      requestedSchema: {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      },
    });
    return text(
      `User response: action=${result.action}, content=${
        JSON.stringify(result.content ?? {})
      }`,
    );
  });

  mcp.tool({
    name: "test_elicitation_sep1034_defaults",
    description: "Elicits a form whose fields all have default values",
  }, (_args, extra) =>
    elicit(extra, {
      message: "Please review and update the form fields with defaults",
      requestedSchema: {
        type: "object",
        properties: {
          name: {
            type: "string",
            description: "User name",
            default: "John Doe",
          },
          age: { type: "integer", description: "User age", default: 30 },
          score: { type: "number", description: "User score", default: 95.5 },
          status: {
            type: "string",
            description: "User status",
            enum: ["active", "inactive", "pending"],
            default: "active",
          },
          verified: {
            type: "boolean",
            description: "Verification status",
            default: true,
          },
        },
      },
    }));

  mcp.tool({
    name: "test_elicitation_sep1330_enums",
    description: "Elicits a form with the five kinds of enum field",
  }, (_args, extra) =>
    elicit(extra, {
      message: "Please select options from the enum fields",
      requestedSchema: {
        type: "object",
        properties: {
          untitledSingle: {
            type: "string",
            description: "Untitled single-select",
            enum: ["option1", "option2", "option3"],
          },
          titledSingle: {
            type: "string",
            description: "Titled single-select",
            oneOf: [
              { const: "value1", title: "First Option" },
              { const: "value2", title: "Second Option" },
              { const: "value3", title: "Third Option" },
            ],
          },
          legacyEnum: {
            type: "string",
            description: "Legacy titled enum",
            enum: ["opt1", "opt2", "opt3"],
            enumNames: ["Option One", "Option Two", "Option Three"],
          },
          untitledMulti: {
            type: "array",
            description: "Untitled multi-select",
            items: { type: "string", enum: ["option1", "option2", "option3"] },
          },
          titledMulti: {
            type: "array",
            description: "Titled multi-select",
            items: {
              anyOf: [
                { const: "value1", title: "First Choice" },
                { const: "value2", title: "Second Choice" },
                { const: "value3", title: "Third Choice" },
              ],
            },
          },
        },
      },
    }));

  // SEP-1699: the server may close a request's SSE stream and let the client
  // poll for the result with Last-Event-ID. The SDK offers `closeSSEStream`
  // only when the transport has an event store; without one the tool simply
  // answers on the open stream.
  mcp.tool({
    name: "test_reconnection",
    description: "Closes its SSE stream mid-call when the transport can resume",
  }, async (_args, extra) => {
    extra.closeSSEStream?.();
    await delay(100);
    return text("Reconnection test completed");
  });
}

function registerResources(mcp: MCPServer): void {
  mcp.resource("test://static-text", {
    name: "static-text",
    description: "A static text resource",
    mimeType: "text/plain",
  }, () => "This is the content of the static text resource.");

  mcp.resource("test://static-binary", {
    name: "static-binary",
    description: "A static binary resource (a PNG image)",
    mimeType: "image/png",
  }, () => Uint8Array.from(atob(RED_PIXEL_PNG), (char) => char.charCodeAt(0)));

  mcp.resource("test://template/{id}/data", {
    name: "template-data",
    description: "Data for one ID, from a resource template",
    mimeType: "application/json",
  }, ({ id }) => ({ id, templateTest: true, data: `Data for ID: ${id}` }));

  mcp.resource("test://watched-resource", {
    name: "watched-resource",
    description: "A resource clients may subscribe to",
    mimeType: "text/plain",
  }, () => "Watched resource content");

  // McpServer has no subscription API; the handlers go on the SDK `Server`,
  // whose handlers every session's protocol instance copies.
  const subscriptions = new Set<string>();
  mcp.server.setRequestHandler("resources/subscribe", ({ params }) => {
    subscriptions.add(params.uri);
    return {};
  });
  mcp.server.setRequestHandler("resources/unsubscribe", ({ params }) => {
    subscriptions.delete(params.uri);
    return {};
  });
}

function registerPrompts(mcp: MCPServer): void {
  mcp.registerPrompt("test_simple_prompt", {
    description: "A simple prompt without arguments",
  }, (): GetPromptResult => ({
    messages: [{
      role: "user",
      content: { type: "text", text: "This is a simple prompt for testing." },
    }],
  }));

  const cities = ["paris", "park", "party", "tests", "testing"];
  mcp.registerPrompt("test_prompt_with_arguments", {
    description: "A prompt with two required arguments",
    argsSchema: {
      arg1: completable(
        z.string().describe("First test argument"),
        (value: string) => cities.filter((city) => city.startsWith(value)),
      ),
      arg2: z.string().describe("Second test argument"),
    },
  }, ({ arg1, arg2 }): GetPromptResult => ({
    messages: [{
      role: "user",
      content: {
        type: "text",
        text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`,
      },
    }],
  }));

  mcp.registerPrompt("test_prompt_with_embedded_resource", {
    description: "A prompt that embeds a resource",
    argsSchema: {
      resourceUri: z.string().describe("URI of the resource to embed"),
    },
  }, ({ resourceUri }): GetPromptResult => ({
    messages: [
      {
        role: "user",
        content: {
          type: "resource",
          resource: {
            uri: resourceUri,
            mimeType: "text/plain",
            text: "Embedded resource content for testing.",
          },
        },
      },
      {
        role: "user",
        content: {
          type: "text",
          text: "Please process the embedded resource above.",
        },
      },
    ],
  }));

  mcp.registerPrompt("test_prompt_with_image", {
    description: "A prompt with an image",
  }, (): GetPromptResult => ({
    messages: [
      {
        role: "user",
        content: { type: "image", data: RED_PIXEL_PNG, mimeType: "image/png" },
      },
      {
        role: "user",
        content: { type: "text", text: "Please analyze the image above." },
      },
    ],
  }));
}

/**
 * Builds the conformance server: every tool, resource and prompt the
 * conformance suite's server scenarios expect, with resource subscriptions
 * and completions declared.
 *
 * @returns The server, ready to `run()`.
 */
export function createConformanceServer(): MCPServer {
  const mcp = new MCPServer({
    name: "mcpkit-conformance",
    version: "0.1.0",
    capabilities: {
      resources: { subscribe: true, listChanged: true },
      completions: {},
    },
    requestState: { verify: requestStateCodec.verify },
  });
  registerTools(mcp);
  registerModernFixtures(mcp);
  registerResources(mcp);
  registerPrompts(mcp);
  return mcp;
}
