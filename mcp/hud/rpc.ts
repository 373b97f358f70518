/**
 * The control channel's JSON-RPC 2.0 vocabulary: its error codes, the error
 * a failed call throws, and the frames it answers with.
 *
 * @module
 */
import { encodeFrame, oversizedMessage } from "./framing.ts";

/** JSON-RPC error codes the channel answers with. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  ServerError: -32000,
} as const;

/** A failed call: the JSON-RPC error to answer with. */
export class ChannelError extends Error {
  /** The JSON-RPC error code. */
  readonly code: number;

  /**
   * Creates the error.
   *
   * @param code The JSON-RPC code.
   * @param message One line.
   */
  constructor(code: number, message: string) {
    super(message);
    this.name = "ChannelError";
    this.code = code;
  }
}

/** A request's id: `undefined` without one, `null` when it is not a string or number. */
export function requestId(
  message: unknown,
): string | number | null | undefined {
  if (typeof message !== "object" || message === null || !("id" in message)) {
    return undefined;
  }
  const id = (message as { id: unknown }).id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * The `error` member of a JSON-RPC reply, for a reply whose id is added later.
 *
 * @param code The error code.
 * @param message One line.
 * @param data More about it.
 * @returns `{error: {code, message, data?}}`.
 */
export function errorBody(
  code: number,
  message: string,
  data?: Record<string, unknown>,
): Record<string, unknown> {
  return { error: { code, message, ...(data && { data }) } };
}

/**
 * A JSON-RPC error frame.
 *
 * @param id The request's id (`null` when it could not be read).
 * @param code The error code.
 * @param message One line.
 * @param data More about it.
 * @returns The frame.
 */
export function errorFrame(
  id: string | number | null,
  code: number,
  message: string,
  data?: Record<string, unknown>,
): Record<string, unknown> {
  return { jsonrpc: "2.0", id, ...errorBody(code, message, data) };
}

/**
 * The answer to a frame past the size bound, which ends its connection:
 * -32600 naming the frame's size (or how much of it was read) and the bound.
 *
 * @param read The frame's size, and whether that size was measured whole.
 * @param limit The bound, bytes.
 * @returns The frame.
 */
export function oversizedFrame(
  read: { size: number; measured: boolean },
  limit: number,
): Record<string, unknown> {
  return errorFrame(
    null,
    ErrorCode.InvalidRequest,
    oversizedMessage(read.size, read.measured),
    { size: read.size, limit },
  );
}

/** Encodes a reply; one over the frame limit becomes an error naming its size. */
export function encodeReply(frame: unknown): Uint8Array {
  try {
    return encodeFrame(frame);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const id = (frame as { id?: string | number | null }).id ?? null;
    return encodeFrame(
      errorFrame(id, ErrorCode.ServerError, `Reply: ${error.message}`),
    );
  }
}

/** An error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
