// Schema helpers shared by hubs, dev endpoints and composition. They reuse the
// SDK's own converters so `/dev/tools` and `{hub}://functions` publish exactly
// the JSON Schema that `tools/list` would.
import { z } from "zod";
import { toJsonSchemaCompat } from "./_sdk.ts";
import { getParseErrorMessage } from "./_sdk.ts";
import type { Shape } from "./tool.ts";

/** A JSON Schema object as published to clients. */
export type JsonSchema = Record<string, unknown>;

/** Converts a zod shape to the JSON Schema `tools/list` would publish. */
export function shapeToJsonSchema(
  shape: Shape,
  pipeStrategy: "input" | "output" = "input",
): JsonSchema {
  return toJsonSchemaCompat(z.object(shape), {
    strictUnions: true,
    pipeStrategy,
  }) as JsonSchema;
}

/** Formats a zod error the way the SDK does: one issue per line, with its path. */
export function formatZodError(error: unknown): string {
  return getParseErrorMessage(error);
}
