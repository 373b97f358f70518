/**
 * The fixtures the conformance suite calls on protocol revision 2026-07-28:
 * multi round-trip requests (`input_required`, SEP-2322), the stateless
 * diagnostics (SEP-2575), `Mcp-Param-*` headers (SEP-2243) and the JSON
 * Schema 2020-12 vocabulary (SEP-2106). On a legacy session the SDK fulfils
 * an `input_required` result itself by sending the client real requests.
 *
 * @module
 */
import {
  acceptedContent,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  fromJsonSchema,
  type InputRequests,
  inputRequired,
  type RegisteredPrompt,
  type RegisteredTool,
} from "@modelcontextprotocol/server";
import type { MCPServer } from "../../mcp/mod.ts";

/**
 * Seals `requestState` (HMAC, per-process key, TTL): it comes back from the
 * client, so it is hostile input. Pass `verify` as the server's
 * `requestState.verify`, so a tampered state is refused (-32602) before any
 * handler runs.
 */
export const requestStateCodec = createRequestStateCodec<
  Record<string, unknown>
>({ key: crypto.getRandomValues(new Uint8Array(32)) });

function text(value: string): CallToolResult {
  return { content: [{ type: "text", text: value }] };
}

function askFor(field: string, message: string, type = "string") {
  return inputRequired.elicit(
    {
      message,
      requestedSchema: {
        type: "object",
        properties: { [field]: { type } },
        required: [field],
      },
    } as Parameters<typeof inputRequired.elicit>[0],
  );
}

function nonce(): string {
  return crypto.randomUUID();
}

function registerInputRequiredTools(mcp: MCPServer): void {
  mcp.tool({
    name: "test_input_required_result_elicitation",
    description: "Asks for the caller's name with an in-band elicitation",
  }, (_args, extra) => {
    const name = acceptedContent<{ name: string }>(
      extra.mcpReq.inputResponses,
      "user_name",
    )?.name;
    if (typeof name === "string") return text(`Hello, ${name}!`);
    return inputRequired({
      inputRequests: { user_name: askFor("name", "What is your name?") },
    });
  });

  mcp.tool({
    name: "test_input_required_result_sampling",
    description: "Asks the client's model a question in-band",
  }, (_args, extra) => {
    const answer = extra.mcpReq.inputResponses?.capital_question as
      | { content?: { text?: string } }
      | undefined;
    if (answer) {
      return text(
        `Sampling response: ${answer.content?.text ?? JSON.stringify(answer)}`,
      );
    }
    return inputRequired({
      inputRequests: {
        capital_question: inputRequired.createMessage({
          messages: [{
            role: "user",
            content: { type: "text", text: "What is the capital of France?" },
          }],
          maxTokens: 100,
        }),
      },
    });
  });

  mcp.tool({
    name: "test_input_required_result_list_roots",
    description: "Asks for the client's roots in-band",
  }, (_args, extra) => {
    const roots = (extra.mcpReq.inputResponses?.client_roots as
      | { roots?: { uri?: string }[] }
      | undefined)?.roots;
    if (!Array.isArray(roots)) {
      return inputRequired({
        inputRequests: { client_roots: inputRequired.listRoots() },
      });
    }
    return text(
      `Client exposed ${roots.length} root(s): ${
        roots.map((root) => root.uri).join(", ")
      }`,
    );
  });

  mcp.tool({
    name: "test_input_required_result_request_state",
    description: "Round-trips sealed requestState with an elicitation",
  }, async (_args, extra) => {
    const confirmed = acceptedContent(extra.mcpReq.inputResponses, "confirm");
    if (confirmed === undefined) {
      return inputRequired({
        inputRequests: { confirm: askFor("ok", "Please confirm", "boolean") },
        requestState: await requestStateCodec.mint({
          tool: "request_state",
          nonce: nonce(),
        }),
      });
    }
    if (extra.mcpReq.requestState() === undefined) {
      throw new Error("Invalid requestState: missing or failed verification");
    }
    return text("state-ok: requestState verified and confirmation received");
  });

  mcp.tool({
    name: "test_input_required_result_multiple_inputs",
    description: "Asks for elicitation, sampling and roots in one round",
  }, async (_args, extra) => {
    const responses = extra.mcpReq.inputResponses;
    const name = acceptedContent<{ name: string }>(responses, "user_name")
      ?.name;
    const greeting = (responses?.greeting as
      | { content?: { text?: string } }
      | undefined)?.content?.text;
    const roots = (responses?.client_roots as { roots?: unknown[] } | undefined)
      ?.roots;
    if (
      typeof name === "string" && typeof greeting === "string" &&
      Array.isArray(roots)
    ) {
      return text(`${greeting} ${name}: ${roots.length} root(s) visible`);
    }
    return inputRequired({
      inputRequests: {
        user_name: askFor("name", "What is your name?"),
        greeting: inputRequired.createMessage({
          messages: [{
            role: "user",
            content: { type: "text", text: "Generate a greeting" },
          }],
          maxTokens: 50,
        }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await requestStateCodec.mint({
        tool: "multiple_inputs",
        nonce: nonce(),
      }),
    });
  });

  mcp.tool({
    name: "test_input_required_result_multi_round",
    description: "Two elicitation rounds, the round kept in requestState",
  }, async (_args, extra) => {
    const state = extra.mcpReq.requestState<Record<string, unknown>>();
    const round = state?.tool === "multi_round" ? Number(state.round) : 0;
    if (round === 0) {
      return inputRequired({
        inputRequests: { step1: askFor("name", "Step 1: What is your name?") },
        requestState: await requestStateCodec.mint({
          tool: "multi_round",
          round: 1,
          nonce: nonce(),
        }),
      });
    }
    const responses = extra.mcpReq.inputResponses;
    if (round === 1) {
      const name = acceptedContent<{ name: string }>(responses, "step1")
        ?.name ?? "unknown";
      return inputRequired({
        inputRequests: {
          step2: askFor("color", "Step 2: What is your favorite color?"),
        },
        requestState: await requestStateCodec.mint({
          tool: "multi_round",
          round: 2,
          name,
          nonce: nonce(),
        }),
      });
    }
    const color = acceptedContent<{ color: string }>(responses, "step2")
      ?.color ?? "unknown";
    return text(`Multi-round complete: ${state?.name} likes ${color}`);
  });

  mcp.tool({
    name: "test_input_required_result_tampered_state",
    description: "Completes only on a retry whose requestState verifies",
  }, async (_args, extra) => {
    if (
      extra.mcpReq.requestState() !== undefined &&
      acceptedContent(extra.mcpReq.inputResponses, "confirm") !== undefined
    ) {
      return text("integrity-ok: requestState verified");
    }
    return inputRequired({
      inputRequests: { confirm: askFor("ok", "Please confirm", "boolean") },
      requestState: await requestStateCodec.mint({
        tool: "tampered_state",
        nonce: nonce(),
      }),
    });
  });

  mcp.tool({
    name: "test_input_required_result_capabilities",
    description: "Requests only the input kinds the client declared",
  }, (_args, extra) => {
    if (extra.mcpReq.inputResponses !== undefined) {
      return text("Capability-aware input requests fulfilled");
    }
    const declared = (extra.mcpReq.envelope as
      | Record<string, Record<string, unknown> | undefined>
      | undefined)?.[CLIENT_CAPABILITIES_META_KEY];
    const inputRequests: InputRequests = {};
    if (declared?.elicitation !== undefined) {
      inputRequests.user_name = askFor("name", "What is your name?");
    }
    if (declared?.sampling !== undefined) {
      inputRequests.greeting = inputRequired.createMessage({
        messages: [{
          role: "user",
          content: { type: "text", text: "Generate a short greeting" },
        }],
        maxTokens: 50,
      });
    }
    if (declared?.roots !== undefined) {
      inputRequests.client_roots = inputRequired.listRoots();
    }
    if (Object.keys(inputRequests).length === 0) {
      return text("No declared client capability supports an in-band request");
    }
    return inputRequired({ inputRequests });
  });

  mcp.prompt({
    name: "test_input_required_result_prompt",
    title: "MRTR Prompt",
    description: "A prompt that asks for context in-band before rendering",
  }, (_args, extra) => {
    const context = acceptedContent<{ context: string }>(
      extra.mcpReq.inputResponses,
      "user_context",
    )?.context;
    if (typeof context === "string") {
      return `Use the following context: ${context}`;
    }
    return inputRequired({
      inputRequests: {
        user_context: askFor("context", "What context should the prompt use?"),
      },
    }) as never;
  });
}

/** The tool and prompt the list-change triggers add and take away in turn. */
interface Toggled {
  tool?: RegisteredTool;
  prompt?: RegisteredPrompt;
}

function registerStatelessDiagnostics(mcp: MCPServer): void {
  mcp.tool(
    {
      name: "test_missing_capability",
      description:
        "Needs the client's sampling capability (an undeclared one is refused with -32021)",
    },
    (_args, extra) =>
      extra.mcpReq.inputResponses?.llm_answer !== undefined
        ? text("sampling round-trip complete")
        : inputRequired({
          inputRequests: {
            llm_answer: inputRequired.createMessage({
              messages: [{
                role: "user",
                content: {
                  type: "text",
                  text: "Reply with the single word: pong",
                },
              }],
              maxTokens: 16,
            }),
          },
        }),
  );

  mcp.tool({
    name: "test_streaming_elicitation",
    description: "Answers on its response stream with no request of its own",
  }, () => text("stream observed: result frames only, no top-level requests"));

  mcp.tool({
    name: "test_logging_tool",
    description:
      "Logs through the request (delivered only when _meta.logLevel asks)",
  }, async (_args, extra) => {
    await extra.mcpReq.log("info", "test_logging_tool ran");
    return text("logged through the request-scoped channel");
  });

  // The triggers really change the lists: MCPServer tells open
  // `subscriptions/listen` streams.
  const toggled: Toggled = {};
  mcp.tool({
    name: "test_trigger_tool_change",
    description: "Adds or removes the tool test_toggled_tool",
  }, () => {
    if (toggled.tool) {
      toggled.tool.remove();
      toggled.tool = undefined;
    } else {
      toggled.tool = mcp.registerTool("test_toggled_tool", {
        description: "Comes and goes with test_trigger_tool_change",
      }, () => text("here"));
    }
    return text("tools list changed");
  });
  mcp.tool({
    name: "test_trigger_prompt_change",
    description: "Adds or removes the prompt test_toggled_prompt",
  }, () => {
    if (toggled.prompt) {
      toggled.prompt.remove();
      toggled.prompt = undefined;
    } else {
      toggled.prompt = mcp.registerPrompt("test_toggled_prompt", {
        description: "Comes and goes with test_trigger_prompt_change",
      }, () => ({
        messages: [{ role: "user", content: { type: "text", text: "here" } }],
      }));
    }
    return text("prompts list changed");
  });
}

function registerSchemaTools(mcp: MCPServer): void {
  // Written as JSON Schema (the SDK's `fromJsonSchema`): the scenarios check
  // that every keyword reaches tools/list as written.
  mcp.registerTool("test_x_mcp_header", {
    description: "Mirrors `region` into the Mcp-Param-Region header",
    inputSchema: fromJsonSchema<{ region?: string; level?: number }>({
      type: "object",
      properties: {
        region: {
          type: "string",
          description: "mirrored into Mcp-Param-Region",
          "x-mcp-header": "Region",
        } as Record<string, unknown>,
        level: { type: "integer", description: "not mirrored" },
      },
    }),
  }, (args) => text(`region=${args.region ?? "<none>"}`));

  mcp.registerTool("json_schema_2020_12_tool", {
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: fromJsonSchema({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: {
        properties: { contactMethod: { const: "phone" } },
        required: ["contactMethod"],
      },
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    }),
  }, (args) => text(`Received: ${JSON.stringify(args)}`));
}

/**
 * Registers the 2026-07-28 fixtures on `mcp`.
 *
 * @param mcp The conformance server.
 */
export function registerModernFixtures(mcp: MCPServer): void {
  registerInputRequiredTools(mcp);
  registerStatelessDiagnostics(mcp);
  registerSchemaTools(mcp);
}
