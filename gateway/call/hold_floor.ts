/**
 * The least a call's hold can be, known while its body is still arriving,
 * so a caller whose balance cannot cover it is refused before the body is
 * parsed (or even read to its end).
 *
 * Neither the byte length nor the text of a body bounds its estimate from
 * below: whitespace is not counted, a base64 image is priced from its pixel
 * size whatever its length, and JSON keeps only the last of a repeated key,
 * so a body can carry megabytes its parse throws away. What does bound it is
 * the body's structure: the `{ } [ ] : ,` outside strings. The input
 * estimate (`estimate.ts`) counts the JSON around values at a third of a
 * token per character, at least `2 + 4 × keys` for an object and
 * `2 + items` for an array, which is never fewer than the structural
 * characters they are written with; so without repeated keys,
 * {@linkcode StructureCounter.floorTokens} is at most the estimate, and the
 * hold takes the larger of the two (`call.ts`), so with them too. The hold
 * then costs at least that many input tokens and one output token at the
 * cheapest rate any model on the route is billed at
 * ({@linkcode cheapestRates}).
 *
 * @module
 */
import type { CatalogEntry, TokenPrices } from "../state/catalog.ts";
import type { RouteName } from "../conventions.ts";
import { costMicros } from "../state/credits/money.ts";

/** The bytes of JSON's structural characters outside strings: `{ } [ ] : ,`. */
const STRUCTURAL = (() => {
  const marks = new Uint8Array(256);
  for (const char of "{}[]:,") marks[char.charCodeAt(0)] = 1;
  return marks;
})();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Counts the structural characters of a JSON text outside its strings, from
 * its UTF-8 bytes as they arrive, in one pass (no byte of a multi-byte
 * character is below 0x80, so bytes can be read one at a time).
 *
 * @example
 * ```ts
 * import { StructureCounter } from "./hold_floor.ts";
 *
 * const counter = new StructureCounter();
 * counter.feed(new TextEncoder().encode('{"a":[1,2],'));
 * counter.feed(new TextEncoder().encode('"b":"{,}"}'));
 * counter.structural; // 8: { : [ , ] , : }
 * counter.floorTokens(); // 3
 * ```
 */
export class StructureCounter {
  #structural = 0;
  #inString = false;
  #escaped = false;

  /** The structural characters counted so far. */
  get structural(): number {
    return this.#structural;
  }

  /**
   * Counts one more piece of the text.
   *
   * @param bytes The next bytes of the body.
   */
  feed(bytes: Uint8Array): void {
    let structural = this.#structural;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) inString = true;
      else structural += STRUCTURAL[byte];
    }
    this.#structural = structural;
    this.#inString = inString;
    this.#escaped = escaped;
  }

  /**
   * The input tokens the estimate counts at least for what was fed: a third
   * of a token per structural character.
   *
   * @returns Tokens, rounded up.
   */
  floorTokens(): number {
    return Math.ceil(this.#structural / 3);
  }
}

/**
 * The cheapest input and output prices any call on `route` can be held at:
 * the lowest of every model's standard, tier and long-context rates, and of
 * their cache-write prices (a body asking for cache writes is held at them).
 *
 * @example
 * ```ts
 * import { cheapestRates } from "./hold_floor.ts";
 *
 * cheapestRates([
 *   { routes: ["chat"], pricing: { input: 3, output: 15, tiers: { flex: { input: 1.5, output: 7.5 } } } },
 *   { routes: ["messages"], pricing: { input: 0.1, output: 0.2 } },
 * ], "chat"); // { input: 1.5, output: 7.5 }
 * ```
 *
 * @param entries The catalog's models.
 * @param route The route of the call; absent: every route.
 * @returns The lowest prices, USD per million tokens; zero when no model serves the route.
 */
export function cheapestRates(
  entries: readonly Pick<CatalogEntry, "routes" | "pricing">[],
  route?: RouteName,
): TokenPrices {
  let input = Infinity;
  let output = Infinity;
  for (const entry of entries) {
    if (route !== undefined && !entry.routes.includes(route)) {
      continue;
    }
    const { tiers, longContext } = entry.pricing;
    for (
      const rates of [entry.pricing, tiers?.priority, tiers?.flex, longContext]
    ) {
      if (!rates) continue;
      const write = rates.cacheWrite ?? rates.input;
      input = Math.min(input, rates.input, write, rates.cacheWrite1h ?? write);
      output = Math.min(output, rates.output);
    }
  }
  return {
    input: Number.isFinite(input) ? input : 0,
    output: Number.isFinite(output) ? output : 0,
  };
}

/**
 * The least a call whose body counts `floorTokens`
 * ({@linkcode StructureCounter.floorTokens}) can be held at: that many input
 * tokens and one output token at `rates`.
 *
 * @example
 * ```ts
 * import { floorHoldMicros } from "./hold_floor.ts";
 *
 * floorHoldMicros(1_000_000, { input: 0.15, output: 0.6 }); // 150001
 * ```
 *
 * @param floorTokens The input tokens the body counts at least.
 * @param rates The cheapest rates on the call's route ({@linkcode cheapestRates}).
 * @returns Micro-USD, rounded up as a charge is.
 */
export function floorHoldMicros(
  floorTokens: number,
  rates: TokenPrices,
): number {
  return costMicros(
    { inputTokens: floorTokens, outputTokens: 1, cachedInputTokens: 0 },
    { input: rates.input, output: rates.output },
  );
}
