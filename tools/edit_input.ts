/**
 * What the `edit` tool takes: Anthropic's text editor tool's input (`view`,
 * `create`, `str_replace`, `insert`, `undo_edit`), so an agent's native
 * editor maps onto it one to one.
 *
 * @module
 */
import { z } from "zod";

/** A command of the `edit` tool. */
export type EditCommand =
  | "view"
  | "create"
  | "str_replace"
  | "insert"
  | "undo_edit";

const COMMANDS: [EditCommand, ...EditCommand[]] = [
  "view",
  "create",
  "str_replace",
  "insert",
  "undo_edit",
];

/** The `edit` tool's input shape (zod): Anthropic's text editor tool's. */
export type EditInputShape = {
  /** What to do. */
  command: z.ZodEnum<{ [C in EditCommand]: C }>;
  /** The file or directory. */
  path: z.ZodString;
  /** create: the content. */
  file_text: z.ZodOptional<z.ZodString>;
  /** str_replace: the text to replace. */
  old_str: z.ZodOptional<z.ZodString>;
  /** str_replace: the replacement; insert: the text. */
  new_str: z.ZodOptional<z.ZodString>;
  /** insert: the line after which to insert. */
  insert_line: z.ZodOptional<z.ZodNumber>;
  /** insert: the text (same as new_str). */
  insert_text: z.ZodOptional<z.ZodString>;
  /** view: the lines to show. */
  view_range: z.ZodOptional<z.ZodArray<z.ZodNumber>>;
};

/** The `edit` tool's input schema (Anthropic's text editor tool's). */
export const EDIT_INPUT: EditInputShape = {
  command: z.enum(COMMANDS).describe(
    "What to do",
  ),
  path: z.string().describe(
    "The file or directory: absolute, or relative to the root",
  ),
  file_text: z.string().optional().describe("create: the new file's content"),
  old_str: z.string().optional().describe(
    "str_replace: text that occurs exactly once in the file",
  ),
  new_str: z.string().optional().describe(
    "str_replace: its replacement (default empty); insert: the text to insert",
  ),
  insert_line: z.number().int().optional().describe(
    "insert: the line after which to insert (0: at the top)",
  ),
  insert_text: z.string().optional().describe(
    "insert: the text to insert (same as new_str)",
  ),
  view_range: z.array(z.number().int()).optional().describe(
    "view: [first, last] line, 1-based; last -1 means the end",
  ),
};

/** The `edit` tool's parsed input. */
export type EditInput = z.output<z.ZodObject<EditInputShape>>;
