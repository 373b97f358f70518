import assert from "node:assert/strict";
import {
  ANTHROPIC_MAX_IMAGE_TOKENS,
  anthropicImageTokens,
  geminiImageTokens,
  imageTokens,
  openaiImageTokens,
} from "./images.ts";

Deno.test("anthropicImageTokens() follows the docs' table: w·h/750 after the long edge fits 1568 px, at most 1,640", () => {
  assert.equal(anthropicImageTokens({ width: 200, height: 200 }), 54);
  assert.equal(anthropicImageTokens({ width: 1092, height: 1092 }), 1590);
  assert.equal(anthropicImageTokens({ width: 784, height: 1568 }), 1640);
  assert.equal(
    anthropicImageTokens({ width: 1920, height: 1080 }),
    ANTHROPIC_MAX_IMAGE_TOKENS,
  );
  assert.equal(
    anthropicImageTokens({ width: 8000, height: 8000 }),
    ANTHROPIC_MAX_IMAGE_TOKENS,
  );
});

Deno.test("openaiImageTokens() follows the docs' examples and each model's own numbers", () => {
  assert.equal(openaiImageTokens("gpt-4o", { width: 1024, height: 1024 }), 765);
  assert.equal(
    openaiImageTokens("gpt-4o", { width: 2048, height: 4096 }),
    1105,
  );
  assert.equal(
    openaiImageTokens("gpt-4o", { width: 4096, height: 8192 }, "low"),
    85,
  );
  // gpt-4o-mini bills 33× the tokens at a 33× lower price.
  assert.equal(
    openaiImageTokens("gpt-4o-mini", { width: 1024, height: 1024 }),
    2833 + 4 * 5667,
  );
  // computer-use-preview's 65 + 129 per tile is below the common 85 + 170: held at the latter.
  assert.equal(
    openaiImageTokens("computer-use-preview", { width: 1280, height: 800 }),
    85 + 170 * 6,
  );
  // gpt-5-mini bills 32-px patches × 1.62, capped at 1,536 patches.
  assert.equal(
    openaiImageTokens("gpt-5-mini", { width: 4000, height: 4000 }),
    Math.ceil(1536 * 1.62),
  );
});

Deno.test("geminiImageTokens() bills 258 up to 384 px and 258 per 768-px tile, at least 1,120 on Gemini 3", () => {
  assert.equal(
    geminiImageTokens("gemini-2.5-pro", { width: 384, height: 384 }),
    258,
  );
  assert.equal(
    geminiImageTokens("gemini-2.5-pro", { width: 385, height: 100 }),
    258,
  );
  assert.equal(
    geminiImageTokens("gemini-2.5-pro", { width: 1920, height: 1080 }),
    258 * 6,
  );
  assert.equal(
    geminiImageTokens("gemini-3-pro-preview", { width: 300, height: 300 }),
    1120,
  );
});

Deno.test("imageTokens() takes the highest rule for xAI and OpenRouter and the provider's most for an unknown size", () => {
  const size = { width: 1920, height: 1080 };
  assert.equal(
    imageTokens({ provider: "xai", upstream: "grok-4-1-fast" }, size),
    Math.max(
      anthropicImageTokens(size),
      openaiImageTokens("grok", size),
      geminiImageTokens("grok", size),
    ),
  );
  assert.equal(
    imageTokens(
      { provider: "openrouter", upstream: "openai/gpt-4o-mini" },
      size,
    ),
    openaiImageTokens("gpt-4o-mini", size),
  );
  assert.equal(
    imageTokens(
      { provider: "anthropic", upstream: "claude-sonnet-4-5" },
      undefined,
    ),
    ANTHROPIC_MAX_IMAGE_TOKENS,
  );
  assert.equal(
    imageTokens({ provider: "openai", upstream: "gpt-4o" }, undefined),
    85 + 170 * 8,
  );
  // A header claiming 2³² px a side is priced as 100 000 px: large, finite.
  const huge = imageTokens({ provider: "gemini", upstream: "gemini-2.5-pro" }, {
    width: 2 ** 32 - 1,
    height: 2 ** 32 - 1,
  });
  assert.ok(Number.isSafeInteger(huge) && huge === 258 * 131 * 131, `${huge}`);
});

/** OpenAI's tile rule with one rounding to whole pixels after each resize. */
function referenceTiles(
  { width, height }: { width: number; height: number },
  round: (x: number) => number,
): number {
  const fit = Math.min(1, 2048 / Math.max(width, height));
  let w = round(width * fit);
  let h = round(height * fit);
  const shortest = Math.min(w, h);
  if (shortest > 768) {
    w = round((w * 768) / shortest);
    h = round((h * 768) / shortest);
  }
  return Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("openaiImageTokens() holds the most of rounding up, truncating and rounding to nearest: 1036 × 2073 is 8 tiles, not 6", () => {
  const size = { width: 1036, height: 2073 };
  assert.equal(referenceTiles(size, Math.ceil), 6);
  assert.equal(referenceTiles(size, Math.floor), 8);
  assert.equal(openaiImageTokens("gpt-4o", size), 85 + 170 * 8);
  assert.equal(
    openaiImageTokens("gpt-4o", { width: 2073, height: 1036 }),
    85 + 170 * 8,
  );
  // Rounding to nearest can bill more than both: 1121 × 2244 is 6 tiles
  // rounded up (1024 × 2048) or truncated (1023 × 2047), 8 rounded to
  // nearest (1023 × 2048, then 768 × 1538).
  const mixed = { width: 1121, height: 2244 };
  assert.equal(referenceTiles(mixed, Math.ceil), 6);
  assert.equal(referenceTiles(mixed, Math.floor), 6);
  assert.equal(referenceTiles(mixed, Math.round), 8);
  assert.equal(openaiImageTokens("gpt-4o", mixed), 85 + 170 * 8);
  // Sizes within 2048 px need no fit and bill alike under every rounding.
  assert.equal(
    openaiImageTokens("gpt-4o", { width: 1280, height: 800 }),
    85 + 170 * 6,
  );
});

Deno.test("openaiImageTokens() is at least the bill under any rounding, over random sizes", () => {
  const random = seeded(20261124);
  const between = (low: number, high: number) =>
    low + Math.floor(random() * (high - low + 1));
  let disagreements = 0;
  for (let i = 0; i < 5_000; i++) {
    // Half any size; half a long side past the 2048-px fit with the aspect
    // ratio near one where the other side ends on a 512-px tile edge after
    // the 768-px step (4:3, 2:1, 8:3), where the roundings part ways.
    let long = between(1, 10_000);
    let short = between(1, 10_000);
    if (i % 2 === 1) {
      long = between(2_049, 10_000);
      const ratio = [4 / 3, 2, 8 / 3][between(0, 2)];
      short = Math.max(1, Math.round(long / ratio) + between(-2, 2));
    }
    const size = i % 4 < 2
      ? { width: short, height: long }
      : { width: long, height: short };
    const held = openaiImageTokens("gpt-4o", size);
    const bills = [Math.ceil, Math.floor, Math.round].map((round) =>
      85 + 170 * referenceTiles(size, round)
    );
    if (new Set(bills).size > 1) disagreements += 1;
    for (const billed of bills) {
      assert.ok(
        held >= billed,
        `${size.width} × ${size.height}: held ${held} < ${billed}`,
      );
    }
  }
  // The sample must hold sizes where rounding matters, or it proves nothing.
  assert.ok(disagreements >= 50, `only ${disagreements} disagreements`);
});
