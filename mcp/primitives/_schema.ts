// Schema helpers shared by hubs, dev endpoints and composition. They convert
// the way the SDK's `tools/list` does (zod 4's JSON Schema, draft 2020-12,
// objects typed), so `/dev/tools` and `{hub}://functions` publish exactly the
// JSON Schema that `tools/list` would.
import { z } from "zod";
import type { Shape } from "./tool.ts";

/** A JSON Schema object as published to clients. */
export type JsonSchema = Record<string, unknown>;

/** Converts a zod shape to the JSON Schema `tools/list` would publish. */
export function shapeToJsonSchema(
  shape: Shape,
  io: "input" | "output" = "input",
): JsonSchema {
  const schema = z.toJSONSchema(z.object(shape), {
    target: "draft-2020-12",
    io,
  }) as JsonSchema;
  return { type: "object", ...schema };
}

/** Formats a zod error as the SDK formats tool input errors: `path: message`, comma-separated. */
export function formatZodError(error: unknown): string {
  if (error instanceof z.ZodError) {
    return error.issues.map((issue) =>
      issue.path.length
        ? `${issue.path.join(".")}: ${issue.message}`
        : issue.message
    ).join(", ");
  }
  return String(error);
}
