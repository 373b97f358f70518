/**
 * Reading client messages that may be hostile: the JSON-RPC 2.0 error a
 * transport answers with instead of dropping the input (or the connection).
 *
 * @module
 */
import { type JSONRPCMessage, JSONRPCMessageSchema } from "./_sdk.ts";

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
