/**
 * A number-guessing evaluation environment on {@linkcode MCPServer}. The
 * `guess` scenario gives every run its own game (kept in a
 * {@linkcode RunState}, so concurrent runs against one process never share
 * one); the agent plays with `look` and `guess`. The hidden `setup` and
 * `evaluate` hubs play the older way: one game per process, started and
 * scored by the harness, which `look` and `guess` play when the caller has
 * no run of its own.
 *
 * @example Playing in-process
 * ```ts
 * import { createTextGameServer } from "./server.ts";
 *
 * const { mcp } = createTextGameServer();
 * // await mcp.run({ transport: "stdio" });
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  BaseHub,
  type EvaluationResult,
  MCPServer,
  runIsolation,
  RunState,
  type ScenarioAnswer,
  type ScenarioResult,
  type ToolExtra,
} from "../../mcp/mod.ts";
import { type GameStatus, NumberGame } from "./game.ts";

/** The state the tools and hubs share. */
export interface TextGameEnv {
  /** The hubs' game (one per process); absent until `setup/start`. */
  game?: NumberGame;
  /** Characters per line of `look`, from the client's `display_width` (pixels, 8 per character). */
  columns: number;
  /** Games started since the server came up. */
  gamesStarted: number;
  /** When the initialize hook ran (ISO 8601). */
  readyAt: string;
}

/** The server and its hubs, so tests and embedders can reach the state. */
export interface TextGame {
  /** The MCP server; `run()` it. */
  mcp: MCPServer;
  /** Hidden tools that prepare a game. */
  setup: BaseHub<TextGameEnv>;
  /** Hidden tools that score a game. */
  evaluate: BaseHub<TextGameEnv>;
  /** The scenario runs' games, one per run. */
  games: RunState<NumberGame>;
}

const DEFAULT_DISPLAY_WIDTH = 1920;
const PIXELS_PER_COLUMN = 8;

/** Fits the history into lines of at most `columns` characters. */
function wrap(words: string[], columns: number): string[] {
  const lines: string[] = [];
  for (const word of words) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= columns) {
      lines[lines.length - 1] = `${last} ${word}`;
    } else lines.push(word);
  }
  return lines;
}

function guessCount(count: number): string {
  return `${count} ${count === 1 ? "guess" : "guesses"}`;
}

/**
 * The text the agent sees: range, budget and history, wrapped to `columns`.
 *
 * @param status The game's status.
 * @param columns Characters per line.
 * @returns The description.
 */
export function describe(status: GameStatus, columns: number): string {
  const lines = [
    status.solved
      ? `Solved: the number was ${status.target}.`
      : status.over
      ? `Out of guesses: the number was ${status.target}.`
      : `The number is between ${status.low} and ${status.high}. ${status.guessesLeft} of ${status.maxGuesses} guesses left.`,
  ];
  if (status.history.length > 0) {
    lines.push(
      ...wrap(
        [
          "Guesses:",
          ...status.history.map((turn) => `${turn.guess}(${turn.hint})`),
        ],
        columns,
      ),
    );
  }
  return lines.join("\n");
}

/**
 * Builds the environment. Nothing is shared between two calls, so tests can
 * build as many as they like.
 *
 * @returns The server and its `setup` and `evaluate` hubs.
 */
export function createTextGameServer(): TextGame {
  const mcp = new MCPServer({
    name: "text-game",
    version: "0.1.0",
    instructions:
      "Guess the secret number. `look` shows what you know; `guess` tries a number " +
      "and answers higher, lower or correct. Use as few guesses as you can.",
    // Each scenario run has its own game: runs may share the process.
    capabilities: runIsolation(true),
  });
  const games = new RunState<NumberGame>();
  const setup = new BaseHub<TextGameEnv>(
    "setup",
    "Prepare a game (harness only).",
  );
  const evaluate = new BaseHub<TextGameEnv>(
    "evaluate",
    "Score the game (harness only).",
  );

  const env = (): TextGameEnv => {
    if (!setup.env) {
      throw new Error(
        "The environment is not initialised: send initialize first",
      );
    }
    return setup.env;
  };
  /** The hubs' game, one per process. */
  const hubGame = (): NumberGame => {
    const current = env().game;
    if (!current) throw new Error("No game in play: call setup/start first");
    return current;
  };
  /** The caller's game: its run's, else the hubs'. */
  const game = (extra: ToolExtra): NumberGame => games.get(extra) ?? hubGame();

  mcp.initialize(async (ctx) => {
    await ctx.progress(0, "Preparing the game");
    const width = ctx.meta?.display_width ?? DEFAULT_DISPLAY_WIDTH;
    setup.env = evaluate.env = {
      columns: Math.max(20, Math.floor(width / PIXELS_PER_COLUMN)),
      gamesStarted: 0,
      readyAt: new Date().toISOString(),
    };
    mcp.mount(setup);
    mcp.mount(evaluate);
    await ctx.progress(100, "Ready");
  });

  mcp.shutdown(() => {
    const status = setup.env?.game?.status();
    console.error(
      `text-game: shutting down after ${
        setup.env?.gamesStarted ?? 0
      } game(s); last game ${
        status ? (status.solved ? "solved" : "unsolved") : "never started"
      }`,
    );
  });

  setup.tool("start", {
    description:
      "Start a new game. A seed picks the secret reproducibly; target fixes it.",
    input: {
      seed: z.number().int().optional().describe("Seed for the secret"),
      target: z.number().int().optional().describe(
        "The secret itself (overrides seed)",
      ),
      max: z.number().int().min(1).default(100).describe(
        "Largest possible secret",
      ),
      max_guesses: z.number().int().min(1).default(7).describe(
        "Guesses allowed",
      ),
    },
  }, ({ seed, target, max, max_guesses }) => {
    const state = env();
    state.game = new NumberGame({ seed, target, max, maxGuesses: max_guesses });
    state.gamesStarted += 1;
    return `New game: guess a number between 1 and ${max} in at most ${max_guesses} guesses.`;
  });

  mcp.tool({
    name: "look",
    description:
      "Show the range the secret is in, the guesses left and the guesses so far.",
    annotations: { readOnlyHint: true },
  }, (_args, extra) => describe(game(extra).status(), env().columns));

  mcp.tool({
    name: "guess",
    description: "Guess the secret number. Answers higher, lower or correct.",
    input: { number: z.number().int().describe("Your guess") },
  }, ({ number }, extra) => {
    const current = game(extra);
    const hint = current.guess(number);
    const status = current.status();
    const answer = hint === "correct"
      ? `Correct! The number is ${number}.`
      : `${number} is too ${
        hint === "higher" ? "low" : "high"
      }: the number is ${hint}.`;
    return `${answer} ${status.guessesLeft} guesses left.`;
  });

  evaluate.tool("solved", {
    description:
      "Reward 1 when the secret was found within the guess budget, else 0.",
  }, (): EvaluationResult => {
    const status = hubGame().status();
    return {
      reward: status.solved ? 1 : 0,
      done: status.over,
      content: `${status.solved ? "Solved" : "Not solved"} after ${
        guessCount(status.history.length)
      }`,
      info: { guesses: status.history.length, maxGuesses: status.maxGuesses },
    };
  });

  evaluate.tool("efficiency", {
    description:
      "Reward in [0, 1]: 1 for a first-try solve, falling linearly to 0 at the budget.",
  }, (): EvaluationResult => {
    const status = hubGame().status();
    const used = status.history.length;
    const reward = status.solved
      ? status.maxGuesses === 1
        ? 1
        : (status.maxGuesses - used) / (status.maxGuesses - 1)
      : 0;
    return {
      reward,
      done: status.over,
      info: { guesses: used, maxGuesses: status.maxGuesses },
    };
  });

  // The same game as a scenario (HUD's shape): setup starts the run's own
  // game, the prompt names the agent's tools, the answer and the game are
  // scored, and the game goes with the run.
  mcp.scenario({
    name: "guess",
    description:
      "Find the secret number with look and guess, then answer with it.",
    input: {
      target: z.number().int().min(1).optional().describe(
        "The secret (default: from the seed)",
      ),
      seed: z.number().int().optional().describe("Seed for the secret"),
      max: z.number().int().min(1).default(100).describe(
        "Largest possible secret",
      ),
      max_guesses: z.number().int().min(1).default(7).describe(
        "Guesses allowed",
      ),
    },
    excludeTools: ["setup", "evaluate"],
  }, async function* ({ target, seed, max, max_guesses }, ctx) {
    const played = games.set(
      ctx,
      new NumberGame({ seed, target, max, maxGuesses: max_guesses }),
    );
    env().gamesStarted += 1;
    try {
      yield* playScenario(played, max, max_guesses);
    } finally {
      games.delete(ctx);
    }
  });

  mcp.resource("game://status", {
    name: "status",
    description:
      "The game's state as JSON; the secret is shown once the game is over.",
  }, () => ({
    ready: setup.env !== undefined,
    gamesStarted: setup.env?.gamesStarted ?? 0,
    columns: setup.env?.columns,
    game: setup.env?.game?.status() ?? null,
  }));

  return { mcp, setup, evaluate, games };
}

/**
 * One run of the `guess` scenario on its game: the prompt, then the score
 * of the game and of the answer (whether it names the secret number).
 */
async function* playScenario(
  played: NumberGame,
  max: number,
  maxGuesses: number,
): AsyncGenerator<string | ScenarioResult, void, ScenarioAnswer> {
  const answer = yield `I picked a secret number between 1 and ${max}. ` +
    `Find it with \`look\` and \`guess\` (at most ${maxGuesses} guesses), ` +
    `then answer with the number.`;
  const status = played.status();
  const text = typeof answer === "string"
    ? answer
    : JSON.stringify(answer.content);
  const named = new RegExp(`\\b${played.secret}\\b`).test(text);
  const efficiency = status.solved
    ? (status.maxGuesses - status.history.length + 1) / status.maxGuesses
    : 0;
  const subscores = [
    { name: "solved", weight: 0.6, value: status.solved ? 1 : 0 },
    { name: "efficiency", weight: 0.2, value: efficiency },
    { name: "answer", weight: 0.2, value: named ? 1 : 0 },
  ];
  yield {
    reward: subscores.reduce((sum, s) => sum + s.weight * s.value, 0),
    done: true,
    content: `${status.solved ? "Solved" : "Not solved"} after ${
      guessCount(status.history.length)
    }; the answer ${named ? "names" : "does not name"} the secret`,
    info: { target: played.secret, guesses: status.history.length },
    subscores,
  };
}
