/**
 * Decoding the parts of a path a caller controls. Private to the gateway.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";

/**
 * A path segment with its percent escapes decoded.
 *
 * @param segment The raw segment.
 * @returns The decoded segment.
 * @throws {GatewayError} A 400 for a malformed escape, the caller's mistake.
 */
function decodePath(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new GatewayError(
      400,
      `Malformed percent escape in the path "${segment.slice(0, 200)}"`,
      { code: "invalid_path" },
    );
  }
}

/**
 * The decoded part of a path after its `/models/` segment: a model id (ids
 * may hold slashes, `z-ai/glm-4.5v`) or a Gemini `model:method`.
 *
 * @param path The request path.
 * @returns The decoded rest.
 * @throws {GatewayError} A 400 for a malformed escape.
 */
export function modelPathOf(path: string): string {
  return decodePath(path.slice(path.indexOf("/models/") + "/models/".length));
}
