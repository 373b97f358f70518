/**
 * Images as the providers bill them: the input tokens an image of a given
 * pixel size (`image_size.ts` reads it from the image's first bytes) costs
 * on each provider's models. Used by the credit hold (`estimate_media.ts`),
 * so every figure is the most a provider can bill, never less.
 *
 * Pricing, from each provider's documentation:
 *
 * - Anthropic ({@link https://docs.claude.com/en/docs/build-with-claude/vision}):
 *   tokens ≈ width × height / 750, after a resize that keeps the long edge
 *   within 1568 px and the image within about 1.15 megapixels ("more than
 *   ~1,600 tokens … it will first be scaled down"). The largest size the
 *   docs' table lists as not resized is 784 × 1568 (1,639 tokens), so the
 *   figure here is capped at {@linkcode ANTHROPIC_MAX_IMAGE_TOKENS}.
 * - OpenAI ({@link https://platform.openai.com/docs/guides/images-vision#calculating-costs}):
 *   detail `high`/`auto`: fit within 2048 × 2048, then the shortest side to
 *   768 (the docs do not say how sizes round to whole pixels: the hold takes
 *   the most tiles any rounding gives), then 170 tokens per 512-px tile plus
 *   85 (`computer-use-preview` screenshots alike); detail `low`: 85. Models differ in the two numbers
 *   (gpt-5: 70/140, computer-use-preview: 65/129, gpt-4o-mini: 2,833/5,667)
 *   and the mini/nano models bill 32-px patches (at most 1,536) times a
 *   multiplier (1.62 for gpt-5-mini and gpt-4.1-mini, 2.46 for the nanos,
 *   1.72 for o4-mini). The hold takes, for each model, the larger of the
 *   85/170 tiles and the model's own rule: never below the docs, and never
 *   below a reading that gives the model the common numbers.
 * - Gemini ({@link https://ai.google.dev/gemini-api/docs/tokens}): 258 tokens
 *   when both sides are at most 384 px, else 258 per 768 × 768 tile. Gemini 3
 *   bills a media-resolution budget instead (1,120 per image at `high`, the
 *   default for images; {@link https://ai.google.dev/gemini-api/docs/media-resolution}),
 *   so a `gemini-3` model holds the larger of the two.
 * - xAI and OpenRouter publish no per-image rule for the models served (an
 *   OpenRouter id names another provider's model): the highest of the three.
 *
 * Which rule a provider's models take is the provider's `imageRule`, in its
 * file under `upstream/providers/`.
 *
 * An image whose size cannot be read (a URL, a file id, an unknown format)
 * holds the most one image can bill on the model: the formula at its dearest
 * shape within {@linkcode MAX_IMAGE_SIDE} px a side (the largest image
 * Anthropic accepts, larger than any the others document).
 *
 * @module
 */
import { type ProviderName, PROVIDERS } from "../upstream/providers/mod.ts";
import type { ImageSize } from "./image_size.ts";

/** The model an image is priced for: a catalog entry's provider and upstream id. */
export interface ImageTarget {
  /** The provider serving the call. */
  provider: ProviderName;
  /** The model id sent upstream. */
  upstream: string;
}

/** OpenAI's `detail` setting of an image part. */
export type ImageDetail = "low" | "high" | "auto";

/** The most tokens one image bills on Anthropic (784 × 1568 / 750, the largest size its table lists). */
export const ANTHROPIC_MAX_IMAGE_TOKENS = 1_640;

/** The side of the square an image of unknown size is priced at (Anthropic's largest accepted image). */
export const MAX_IMAGE_SIDE = 8_000;

function scaleToFit(
  { width, height }: ImageSize,
  maxWidth: number,
  maxHeight: number,
): ImageSize {
  const scale = Math.min(1, maxWidth / width, maxHeight / height);
  return scale < 1
    ? {
      width: Math.ceil(width * scale),
      height: Math.ceil(height * scale),
    }
    : { width, height };
}

/**
 * Tokens an image bills on Anthropic's models.
 *
 * @example
 * ```ts
 * import { anthropicImageTokens } from "./images.ts";
 * anthropicImageTokens({ width: 1000, height: 1000 }); // 1334
 * ```
 *
 * @param image The image's size.
 * @returns Tokens.
 */
export function anthropicImageTokens(image: ImageSize): number {
  const fitted = scaleToFit(image, 1568, 1568);
  return Math.min(
    Math.ceil((fitted.width * fitted.height) / 750),
    ANTHROPIC_MAX_IMAGE_TOKENS,
  );
}

/** 512-px tiles of an image already within 2048 × 2048, after its shortest side goes down to 768 (whole pixels, rounded up). */
function tilesAfterShortest(width: number, height: number): number {
  const shortest = Math.min(width, height);
  if (shortest > 768) {
    width = Math.ceil((width * 768) / shortest);
    height = Math.ceil((height * 768) / shortest);
  }
  return Math.ceil(width / 512) * Math.ceil(height / 512);
}

function openaiTiles(image: ImageSize): number {
  // OpenAI does not say how it rounds the fitted size to whole pixels, and
  // neither rounding bounds the other: rounding the shortest side up shrinks
  // the other side in the next step (1036 × 2073 fits to 1024 × 2048, hence
  // 768 × 1536 and 6 tiles, or truncated to 1023 × 2048, hence 768 × 1537
  // and 8); and rounding to nearest can bill more than both (1121 × 2244:
  // 6 tiles up or truncated, 8 at 1023 × 2048). So the hold takes the most
  // tiles over each fitted side rounded either way, which covers rounding
  // up, truncating and rounding to nearest; the second step rounds up, as
  // tiles only grow with its sides.
  const longest = Math.max(image.width, image.height);
  if (longest <= 2048) return tilesAfterShortest(image.width, image.height);
  // The exact fitted sides, from one correctly rounded division each.
  const width = (image.width * 2048) / longest;
  const height = (image.height * 2048) / longest;
  let most = 0;
  for (const w of new Set([Math.floor(width), Math.ceil(width)])) {
    for (const h of new Set([Math.floor(height), Math.ceil(height)])) {
      most = Math.max(most, tilesAfterShortest(w, h));
    }
  }
  return most;
}

function openaiPatches(image: ImageSize): number {
  const patches = Math.ceil(image.width / 32) * Math.ceil(image.height / 32);
  return Math.min(patches, 1_536);
}

/** OpenAI tile prices by upstream model prefix (base, per tile); the first match wins. */
const OPENAI_TILES: readonly [string, number, number][] = [
  ["gpt-4o-mini", 2_833, 5_667],
  ["computer-use-preview", 65, 129],
  ["gpt-5", 70, 140],
  ["o1", 75, 150],
  ["o3", 75, 150],
];

/** OpenAI patch multipliers by upstream model prefix. */
const OPENAI_PATCHES: readonly [string, number][] = [
  ["gpt-5-mini", 1.62],
  ["gpt-4.1-mini", 1.62],
  ["gpt-5-nano", 2.46],
  ["gpt-4.1-nano", 2.46],
  ["o4-mini", 1.72],
];

/**
 * Tokens an image bills on an OpenAI model (see the module doc).
 *
 * @example
 * ```ts
 * import { openaiImageTokens } from "./images.ts";
 * openaiImageTokens("gpt-4o", { width: 1024, height: 1024 }, "high"); // 765
 * openaiImageTokens("gpt-4o", { width: 1024, height: 1024 }, "low"); // 85
 * ```
 *
 * @param model The upstream model id.
 * @param image The image's size.
 * @param detail The part's `detail` (absent: `auto`, billed as `high`).
 * @returns Tokens.
 */
export function openaiImageTokens(
  model: string,
  image: ImageSize,
  detail: ImageDetail = "auto",
): number {
  const tiles = detail === "low" ? 0 : openaiTiles(image);
  let tokens = 85 + 170 * tiles;
  const rule = OPENAI_TILES.find(([prefix]) => model.startsWith(prefix));
  if (rule) tokens = Math.max(tokens, rule[1] + rule[2] * tiles);
  const patch = OPENAI_PATCHES.find(([prefix]) => model.startsWith(prefix));
  if (patch) {
    tokens = Math.max(tokens, Math.ceil(openaiPatches(image) * patch[1]));
  }
  return tokens;
}

/**
 * Tokens an image bills on a Gemini model (see the module doc).
 *
 * @example
 * ```ts
 * import { geminiImageTokens } from "./images.ts";
 * geminiImageTokens("gemini-2.5-pro", { width: 300, height: 200 }); // 258
 * geminiImageTokens("gemini-2.5-pro", { width: 1920, height: 1080 }); // 1548
 * ```
 *
 * @param model The upstream model id.
 * @param image The image's size.
 * @returns Tokens.
 */
export function geminiImageTokens(model: string, image: ImageSize): number {
  const tiles = image.width <= 384 && image.height <= 384
    ? 1
    : Math.ceil(image.width / 768) * Math.ceil(image.height / 768);
  const tokens = 258 * tiles;
  return model.startsWith("gemini-3") ? Math.max(tokens, 1_120) : tokens;
}

/** The model id after an OpenRouter-style `vendor/` prefix. */
function bareModel(model: string): string {
  const slash = model.indexOf("/");
  return slash < 0 ? model : model.slice(slash + 1);
}

/**
 * Tokens one image bills on a model: its provider's rule at the image's size,
 * or at its dearest shape within {@linkcode MAX_IMAGE_SIDE} px a side when the
 * size is unknown.
 *
 * @example
 * ```ts
 * import { imageTokens } from "./images.ts";
 * imageTokens({ provider: "anthropic", upstream: "claude-sonnet-4-5" }, { width: 1280, height: 800 }); // 1366
 * imageTokens({ provider: "openai", upstream: "computer-use-preview" }, { width: 1280, height: 800 }); // 1105
 * ```
 *
 * @param target The model.
 * @param image The size, if known.
 * @param detail OpenAI's `detail` of the part.
 * @returns Tokens.
 */
export function imageTokens(
  target: ImageTarget,
  image: ImageSize | undefined,
  detail?: ImageDetail,
): number {
  if (image === undefined) {
    // The dearest shapes: a large square (Gemini's tiles) and a long strip
    // that OpenAI cuts into 2 × 4 tiles.
    return Math.max(
      priced(target, { width: MAX_IMAGE_SIDE, height: MAX_IMAGE_SIDE }, detail),
      priced(target, { width: 3_000, height: MAX_IMAGE_SIDE }, detail),
    );
  }
  // A header may claim any size up to 2³² px; past 100 000 px a side no
  // provider takes the image, and the figure stays a safe integer.
  return priced(target, {
    width: Math.min(image.width, 100_000),
    height: Math.min(image.height, 100_000),
  }, detail);
}

function priced(
  target: ImageTarget,
  sized: ImageSize,
  detail: ImageDetail | undefined,
): number {
  switch (PROVIDERS[target.provider].imageRule) {
    case "anthropic":
      return anthropicImageTokens(sized);
    case "openai":
      return openaiImageTokens(target.upstream, sized, detail);
    case "gemini":
      return geminiImageTokens(target.upstream, sized);
    case "dearest": {
      const model = bareModel(target.upstream);
      return Math.max(
        anthropicImageTokens(sized),
        openaiImageTokens(model, sized, detail),
        geminiImageTokens(model, sized),
      );
    }
  }
}
