import assert from "node:assert/strict";
import { NumberGame, secretFromSeed } from "./game.ts";

Deno.test("secretFromSeed() gives the same secret for the same seed, within range", () => {
  for (let seed = 0; seed < 200; seed++) {
    const secret = secretFromSeed(seed, 100);
    assert.equal(secretFromSeed(seed, 100), secret);
    assert.ok(Number.isInteger(secret) && secret >= 1 && secret <= 100);
  }
  const distinct = new Set(
    Array.from({ length: 50 }, (_, seed) => secretFromSeed(seed, 1000)),
  );
  assert.ok(distinct.size > 40, `Seeds spread poorly: ${distinct.size} of 50`);
});

Deno.test("NumberGame answers higher, lower and correct and narrows the range", () => {
  const game = new NumberGame({ target: 42, max: 100, maxGuesses: 5 });
  assert.equal(game.guess(50), "lower");
  assert.equal(game.guess(25), "higher");
  assert.deepEqual(
    { low: game.status().low, high: game.status().high },
    { low: 26, high: 49 },
  );
  assert.equal(game.status().target, undefined, "The secret stays hidden");
  assert.equal(game.guess(42), "correct");
  const status = game.status();
  assert.equal(status.solved, true);
  assert.equal(status.over, true);
  assert.equal(status.target, 42);
  assert.equal(status.guessesLeft, 2);
  assert.throws(() => game.guess(1), /the game is over/);
});

Deno.test("NumberGame ends unsolved when the guess budget is spent", () => {
  const game = new NumberGame({ target: 3, max: 10, maxGuesses: 2 });
  game.guess(1);
  game.guess(2);
  assert.equal(game.over, true);
  assert.equal(game.solved, false);
  assert.equal(game.status().target, 3);
});

Deno.test("NumberGame rejects out-of-range guesses and options without using a guess", () => {
  const game = new NumberGame({ seed: 7, max: 10 });
  assert.throws(() => game.guess(0), RangeError);
  assert.throws(() => game.guess(11), RangeError);
  assert.throws(() => game.guess(2.5), RangeError);
  assert.equal(game.status().guessesLeft, 7);
  assert.throws(() => new NumberGame({ target: 11, max: 10 }), /target "11"/);
  assert.throws(() => new NumberGame({ max: 0 }), /max "0"/);
  assert.throws(() => new NumberGame({ maxGuesses: 0 }), /maxGuesses "0"/);
});

Deno.test("a binary search always solves a game up to 127 within the default 7 guesses", () => {
  for (let target = 1; target <= 127; target++) {
    const game = new NumberGame({ target, max: 127 });
    let [low, high] = [1, 127];
    while (!game.over) {
      const mid = Math.floor((low + high) / 2);
      const hint = game.guess(mid);
      if (hint === "higher") low = mid + 1;
      if (hint === "lower") high = mid - 1;
    }
    assert.equal(game.solved, true, `Target ${target} was not found`);
  }
});
