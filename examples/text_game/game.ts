/**
 * The rules of the number-guessing game, apart from MCP: a seeded secret
 * between 1 and `max`, a guess budget, and "higher"/"lower" hints.
 *
 * @module
 */

/** How a game is started. */
export interface GameOptions {
  /** Seed for the secret; the same seed gives the same secret. */
  seed?: number;
  /** The secret itself, for tests and fixed tasks; overrides `seed`. */
  target?: number;
  /** Largest possible secret (the smallest is 1); default 100. */
  max?: number;
  /** Guesses allowed; default 7 (enough for a binary search up to 127). */
  maxGuesses?: number;
}

/** The answer to one guess. */
export type Hint = "higher" | "lower" | "correct";

/** One guess and its answer. */
export interface Turn {
  /** The number guessed. */
  guess: number;
  /** Whether the secret is higher, lower, or this number. */
  hint: Hint;
}

/** What the status resource and `look` show; the secret only once the game is over. */
export interface GameStatus {
  /** The secret lies in `[1, max]`. */
  max: number;
  /** Guesses allowed in total. */
  maxGuesses: number;
  /** Guesses left. */
  guessesLeft: number;
  /** Smallest number still possible. */
  low: number;
  /** Largest number still possible. */
  high: number;
  /** Every guess so far. */
  history: Turn[];
  /** Whether the secret was found. */
  solved: boolean;
  /** Whether the game has ended (solved or out of guesses). */
  over: boolean;
  /** The secret, revealed once the game is over. */
  target?: number;
}

/**
 * A deterministic pseudo-random integer in `[1, max]` from a seed
 * (mulberry32), so a task defined by its seed is reproducible.
 *
 * @param seed Any integer.
 * @param max Largest value.
 * @returns An integer between 1 and `max`.
 */
export function secretFromSeed(seed: number, max: number): number {
  let t = (seed + 0x6d2b79f5) | 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  const unit = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  return 1 + Math.floor(unit * max);
}

/** One game: guesses narrow `[low, high]` until the secret is found or the budget is spent. */
export class NumberGame {
  /** Largest possible secret. */
  readonly max: number;
  /** Guesses allowed. */
  readonly maxGuesses: number;
  readonly #target: number;
  readonly #history: Turn[] = [];
  #low = 1;
  #high: number;

  /**
   * Starts a game.
   *
   * @param options Seed or target, range and guess budget.
   * @throws {RangeError} When `max`, `maxGuesses` or `target` is out of range.
   */
  constructor(options: GameOptions = {}) {
    const { max = 100, maxGuesses = 7 } = options;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(
        `Cannot start a game with max "${max}": expected an integer of at least 1`,
      );
    }
    if (!Number.isInteger(maxGuesses) || maxGuesses < 1) {
      throw new RangeError(
        `Cannot start a game with maxGuesses "${maxGuesses}": expected an integer of at least 1`,
      );
    }
    const target = options.target ??
      secretFromSeed(options.seed ?? Date.now(), max);
    if (!Number.isInteger(target) || target < 1 || target > max) {
      throw new RangeError(
        `Cannot start a game with target "${target}": expected an integer in [1, ${max}]`,
      );
    }
    this.max = max;
    this.maxGuesses = maxGuesses;
    this.#target = target;
    this.#high = max;
  }

  /**
   * The secret, for graders; the agent learns it only from the status once
   * the game is over.
   */
  get secret(): number {
    return this.#target;
  }

  /** Whether the secret was found. */
  get solved(): boolean {
    return this.#history.at(-1)?.hint === "correct";
  }

  /** Whether the game has ended. */
  get over(): boolean {
    return this.solved || this.#history.length >= this.maxGuesses;
  }

  /**
   * Makes a guess.
   *
   * @param guess The number.
   * @returns The hint.
   * @throws {Error} When the game is over.
   * @throws {RangeError} When the guess is not an integer in `[1, max]`.
   */
  guess(guess: number): Hint {
    if (this.over) {
      throw new Error(
        `Cannot guess "${guess}": the game is over, start a new one`,
      );
    }
    if (!Number.isInteger(guess) || guess < 1 || guess > this.max) {
      throw new RangeError(
        `Cannot guess "${guess}": expected an integer in [1, ${this.max}]`,
      );
    }
    const hint: Hint = guess === this.#target
      ? "correct"
      : guess < this.#target
      ? "higher"
      : "lower";
    if (hint === "higher") this.#low = Math.max(this.#low, guess + 1);
    if (hint === "lower") this.#high = Math.min(this.#high, guess - 1);
    if (hint === "correct") this.#low = this.#high = guess;
    this.#history.push({ guess, hint });
    return hint;
  }

  /**
   * The game's state; the secret only once the game is over.
   *
   * @returns The status.
   */
  status(): GameStatus {
    return {
      max: this.max,
      maxGuesses: this.maxGuesses,
      guessesLeft: this.maxGuesses - this.#history.length,
      low: this.#low,
      high: this.#high,
      history: [...this.#history],
      solved: this.solved,
      over: this.over,
      ...(this.over && { target: this.#target }),
    };
  }
}
