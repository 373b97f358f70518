/**
 * The screenshots of a results file: kept out of its JSONL lines, each
 * written once, named by its SHA-256, into the folder beside the results
 * ({@linkcode imagesDirFor}, {@linkcode storeImages}); the report embeds
 * them when it is built.
 *
 * @module
 */
import type { Trajectory, TrajectoryImage } from "../agents/trajectory.ts";
import type { EvalResult } from "../run/result.ts";

/** Reads a stored image by its SHA-256 and extension; `undefined` when it is missing. */
export type ImageReader = (
  sha256: string,
  ext: string,
) => Uint8Array | undefined;

export const IMAGE_TYPES: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
};

export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The file extension of an image type we show; none for any other (own keys only: not "toString"). */
export function imageExt(type: unknown): string | undefined {
  return typeof type === "string" && Object.hasOwn(IMAGE_TYPES, type)
    ? IMAGE_TYPES[type]
    : undefined;
}

export const SHA256 = /^[0-9a-f]{64}$/;

/** A stored image larger than this is not embedded. */
export const MAX_IMAGE_FILE_BYTES = 20 * 1024 * 1024;

/**
 * The folder of a results file's images: its name without `.jsonl`, plus
 * `.images`.
 *
 * @example
 * ```ts
 * import { imagesDirFor } from "./images.ts";
 * imagesDirFor("runs/eval-results.jsonl"); // "runs/eval-results.images"
 * ```
 *
 * @param resultsPath The results file.
 * @returns The folder.
 */
export function imagesDirFor(resultsPath: string): string {
  return `${resultsPath.replace(/\.jsonl$/i, "")}.images`;
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    bytes as Uint8Array<ArrayBuffer>,
  );
  return Array.from(
    new Uint8Array(digest),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

/**
 * A result with every inline image of its trajectory written once into
 * `dir` (as `<sha256>.<ext>`) and replaced by a reference, so its JSONL line
 * stays small. Images of a type a browser cannot show, or that are not
 * base64, are dropped from the copy (the reference says so).
 *
 * @example
 * ```ts ignore
 * import { imagesDirFor, storeImages } from "./images.ts";
 * const line = JSON.stringify(await storeImages(result, imagesDirFor(out)));
 * ```
 *
 * @param result The result.
 * @param dir The images folder (made when needed).
 * @returns The result with image references.
 */
export async function storeImages(
  result: EvalResult,
  dir: string,
): Promise<EvalResult> {
  if (!result.trajectory) return result;
  let made = false;
  const store = async (image: TrajectoryImage): Promise<TrajectoryImage> => {
    if (!("data" in image)) return image;
    const ext = imageExt(image.mimeType);
    if (!ext || !BASE64.test(image.data)) {
      return {
        mimeType: String(image.mimeType).slice(0, 100),
        sha256: "",
        bytes: 0,
      };
    }
    const bytes = new Uint8Array(Buffer.from(image.data, "base64"));
    const sha256 = await sha256Hex(bytes);
    if (!made) {
      await Deno.mkdir(dir, { recursive: true });
      made = true;
    }
    await Deno.writeFile(`${dir}/${sha256}.${ext}`, bytes, { createNew: true })
      .catch((error) => {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      });
    return { mimeType: image.mimeType, sha256, bytes: bytes.length };
  };
  const trajectory: Trajectory = {
    prompt: await Promise.all(
      result.trajectory.prompt.map(async (message) =>
        message.image
          ? { ...message, image: await store(message.image) }
          : message
      ),
    ),
    steps: await Promise.all(
      result.trajectory.steps.map(async (step) => ({
        ...step,
        tool_calls: await Promise.all(
          step.tool_calls.map(async (call) =>
            call.result
              ? {
                ...call,
                result: {
                  ...call.result,
                  images: await Promise.all(call.result.images.map(store)),
                },
              }
              : call
          ),
        ),
      })),
    ),
  };
  return { ...result, trajectory };
}
