/**
 * Reads a request body piece by piece, within the gateway's size limit, and
 * counts its JSON structure as it arrives (`../call/hold_floor.ts`), so a
 * caller whose balance cannot cover even that is refused while the rest of
 * the body is still unread, and never parsed.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import { StructureCounter } from "../call/hold_floor.ts";

/** A body read: its text, and the input tokens its structure holds at least. */
export interface ReadBody {
  /** The body, decoded as UTF-8 (an invalid sequence becomes U+FFFD, as `Request.text()` does). */
  text: string;
  /** {@linkcode StructureCounter.floorTokens} of the whole body. */
  floorTokens: number;
}

/** Options of {@linkcode readBody}. */
export interface ReadBodyOptions {
  /** The largest body accepted, bytes: a larger one is refused with 413. */
  maxBytes: number;
  /**
   * Called after each piece with the floor so far: what it throws refuses
   * the body, and the rest of it is not read.
   */
  check?: (floorTokens: number) => void;
}

/**
 * The 413 for a body over the limit.
 *
 * @example
 * ```ts
 * import { bodyTooLarge } from "./body_reader.ts";
 *
 * bodyTooLarge(1024).message; // "Request body is larger than 1024 bytes"
 * ```
 *
 * @param maxBytes The limit.
 * @returns The error.
 */
export function bodyTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    413,
    `Request body is larger than ${maxBytes} bytes`,
    { code: "request_too_large" },
  );
}

/**
 * Reads `request`'s body: refused with 413 from its `content-length` or as
 * soon as more than `maxBytes` arrived, and with whatever `check` throws
 * after any piece. Either way the rest is left unread.
 *
 * @example
 * ```ts
 * import { readBody } from "./body_reader.ts";
 *
 * const request = new Request("http://localhost/", { method: "POST", body: '{"a":[1,2]}' });
 * const { text, floorTokens } = await readBody(request, { maxBytes: 1024 });
 * // text === '{"a":[1,2]}', floorTokens === 2
 * ```
 *
 * @param request The request.
 * @param options The size limit and the check.
 * @returns The text and its floor.
 * @throws {GatewayError} 413 for a body over the limit; what `check` throws.
 */
export async function readBody(
  request: Request,
  options: ReadBodyOptions,
): Promise<ReadBody> {
  const { maxBytes, check } = options;
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw bodyTooLarge(maxBytes);
  const counter = new StructureCounter();
  if (!request.body) return { text: "", floorTokens: 0 };
  const reader = request.body.getReader();
  const pieces: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxBytes) throw bodyTooLarge(maxBytes);
      counter.feed(value);
      check?.(counter.floorTokens());
      pieces.push(value);
    }
  } catch (error) {
    // Nothing more of it is read: the refusal goes out at once.
    reader.cancel().catch(() => {});
    throw error;
  }
  return {
    text: new TextDecoder().decode(joined(pieces, size)),
    floorTokens: counter.floorTokens(),
  };
}

/** The pieces as one array (the piece itself when there is one). */
function joined(pieces: readonly Uint8Array[], size: number): Uint8Array {
  if (pieces.length === 1) return pieces[0];
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const piece of pieces) {
    whole.set(piece, offset);
    offset += piece.length;
  }
  return whole;
}
