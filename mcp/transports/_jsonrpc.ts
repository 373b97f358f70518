/**
 * Reading client messages that may be hostile: the JSON-RPC 2.0 error a
 * transport answers with instead of dropping the input (or the connection),
 * and the same for an HTTP POST body.
 *
 * @module
 */
import { type JSONRPCMessage, JSONRPCMessageSchema } from "../_sdk.ts";

/** JSON-RPC 2.0 error codes for input that never reaches a handler. */
export const PARSE_ERROR = -32700;
/** The message is JSON but not a valid JSON-RPC 2.0 message. */
export const INVALID_REQUEST = -32600;

/** A JSON-RPC error response to input that could not be read. */
export interface JsonRpcInputError {
  jsonrpc: "2.0";
  id: string | number | null;
  error: { code: number; message: string };
}

/** One message read, or the error to answer with. */
export type ReadResult =
  | { message: JSONRPCMessage }
  | { error: JsonRpcInputError };

/**
 * Builds the error response to unreadable input. The id is the one the input
 * carried when it is a valid id, so a client waiting on it gets its answer;
 * otherwise `null`, as JSON-RPC 2.0 requires.
 */
export function inputError(
  code: number,
  message: string,
  value?: unknown,
): JsonRpcInputError {
  const id = (value as { id?: unknown } | null)?.id;
  return {
    jsonrpc: "2.0",
    id: typeof id === "string" || typeof id === "number" ? id : null,
    error: { code, message },
  };
}

/**
 * Validates one parsed JSON value as a single JSON-RPC message. Batches are
 * refused: MCP 2025-06-18 removed JSON-RPC batching.
 */
export function validateMessage(value: unknown): ReadResult {
  if (Array.isArray(value)) {
    return {
      error: inputError(
        INVALID_REQUEST,
        "Invalid Request: JSON-RPC batches are not supported",
      ),
    };
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) {
    return {
      error: inputError(
        INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 message",
        value,
      ),
    };
  }
  return { message: parsed.data };
}

/** Parses one line of text as a single JSON-RPC message. */
export function readMessage(text: string): ReadResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: inputError(PARSE_ERROR, "Parse error: invalid JSON") };
  }
  return validateMessage(value);
}

/**
 * Parses a POST body as JSON-RPC: one message or a batch, else the error response.
 *
 * @param request The HTTP request.
 * @returns The parsed body, or the 400 response to send.
 */
export async function readJsonRpcBody(request: Request): Promise<unknown> {
  let value: unknown;
  try {
    value = JSON.parse(await request.text());
  } catch {
    return jsonRpcErrorResponse(400, PARSE_ERROR, "Parse error: invalid JSON");
  }
  const messages = Array.isArray(value) && value.length > 0 ? value : [value];
  for (const message of messages) {
    const read = validateMessage(message);
    if ("error" in read) {
      return Response.json(read.error, { status: 400 });
    }
  }
  return value;
}

/**
 * A JSON-RPC error as an HTTP response, with no request id.
 *
 * @param status The HTTP status.
 * @param code The JSON-RPC error code.
 * @param message The error message.
 * @returns The response.
 */
export function jsonRpcErrorResponse(
  status: number,
  code: number,
  message: string,
): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, {
    status,
  });
}
