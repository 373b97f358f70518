/**
 * Caller keys and the live catalog from the command line, straight on the
 * gateway's store: PostgreSQL when `GATEWAY_STORE` is set, else the KV at
 * `GATEWAY_KV_PATH` (default `./data/gateway.kv`). The admin API without a
 * running gateway.
 *
 * ```sh
 * deno task keys create --name alice --credits 10
 * deno task keys list
 * deno task keys show ck_…
 * deno task keys limits ck_… '{"rpm":60}'
 * deno task keys topup ck_… --amount 5
 * deno task keys revoke ck_…
 * deno task keys model-set '{"id":"m",…}'
 * deno task keys model-remove m
 * ```
 *
 * Output is JSON on stdout; a bad input prints one line on stderr and exits 1.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type CallerInfo,
  createCaller,
  getCaller,
  listCallers,
  revokeCaller,
  setCallerLimits,
} from "../state/callers.ts";
import { firstIssue } from "../_zod.ts";
import { CatalogEntryError } from "../state/catalog.ts";
import { BalanceRangeError, topUp } from "../state/credits/ledger.ts";
import { type CallerLimits, limitsSchema } from "../state/limits/limits.ts";
import { putModel, removeModel } from "../state/live_catalog.ts";
import {
  MAX_BALANCE_MICROS,
  microsToUsd,
  usdToMicros,
} from "../state/credits/money.ts";
import { resolve } from "node:path";
import { ConfigError } from "../config.ts";
import {
  closeStore,
  openStore as openGatewayStore,
} from "../state/store/mod.ts";

/** The KV the gateway and this command open when `GATEWAY_KV_PATH` is unset. */
const DEFAULT_KV_PATH = "./data/gateway.kv";

/** The usage text printed by `help`. */
export const USAGE = `Usage: deno task keys <command> [options]

Commands:
  create --name <name> [--credits <usd>] [--limits '<json>']
                                           create a caller key (the key is shown once)
  limits <id> '<json>' | none              set (or remove) a key's limits: {"rpm":60,"tpm":100000,
                                           "spend":{"amount":5,"period":"day"},"models":["gpt-4o-mini"],
                                           "expiresAt":"2026-12-31T00:00:00Z"}, every field optional
  list                                     list caller keys (no secrets)
  show <id>                                show one caller key
  topup <id> --amount <usd>                add credits (negative removes, never below zero)
  revoke <id>                              delete a caller key
  model-set '<catalog entry JSON>'         add or replace a model for every gateway process
  model-remove <model id>                  remove a model for every gateway process

The store is GATEWAY_STORE (a postgres:// URL) when set, else the KV at GATEWAY_KV_PATH
(default ./data/gateway.kv, from the checkout's root under deno task); the first line
on stderr names the one opened, and says when a KV file was just created (empty).`;

/** The largest amount of USD a command takes (the largest balance). */
const MAX_USD = microsToUsd(MAX_BALANCE_MICROS);

/** A bad command line: reported as one line, exit code 1. */
class UsageError extends Error {}

function wire(caller: CallerInfo): Record<string, unknown> {
  return {
    id: caller.id,
    name: caller.name,
    balance: microsToUsd(caller.balanceMicros),
    created_at: new Date(caller.createdAt).toISOString(),
    limits: caller.limits ?? null,
  };
}

function usd(
  flag: string,
  value: string | undefined,
  required: boolean,
): number {
  if (value === undefined) {
    if (required) throw new UsageError(`Missing --${flag}`);
    return 0;
  }
  const amount = Number(value);
  if (value.trim() === "" || !Number.isFinite(amount)) {
    throw new UsageError(
      `Invalid --${flag} "${value}": expected a number of USD`,
    );
  }
  // Amounts stay where micro-USD are exact, as on the admin API.
  if (Math.abs(amount) > MAX_USD) {
    throw new UsageError(
      `Invalid --${flag} "${value}": expected at most ${MAX_USD} USD either way`,
    );
  }
  return amount;
}

function parseLimits(text: string): CallerLimits {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new UsageError(
      `Invalid limits: not JSON, e.g. '{"rpm":60,"spend":{"amount":5,"period":"day"}}'`,
    );
  }
  const parsed = limitsSchema.safeParse(raw);
  if (!parsed.success) {
    const { param, message } = firstIssue(parsed.error);
    throw new UsageError(`Invalid limits: "${param}" ${message}`);
  }
  return parsed.data;
}

function oneId(positionals: string[], command: string): string {
  if (positionals.length !== 1) {
    throw new UsageError(`"${command}" takes exactly one caller id`);
  }
  return positionals[0];
}

/**
 * Runs one command against `kv` and returns what to print.
 *
 * @param kv The gateway's KV.
 * @param command The command name.
 * @param args The rest of the command line.
 * @returns The JSON-ready result.
 * @throws {UsageError} On a bad command line or an unknown caller.
 */
async function run(
  kv: Deno.Kv,
  command: string,
  args: string[],
): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      name: { type: "string" },
      credits: { type: "string" },
      limits: { type: "string" },
      amount: { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  switch (command) {
    case "create": {
      if (positionals.length > 0) {
        throw new UsageError(`Unexpected argument "${positionals[0]}"`);
      }
      if (values.name === undefined) throw new UsageError("Missing --name");
      const credits = usd("credits", values.credits, false);
      if (credits < 0) {
        throw new UsageError(
          `Invalid --credits "${values.credits}": expected zero or more`,
        );
      }
      const created = await createCaller(kv, {
        name: values.name,
        creditsMicros: usdToMicros(credits),
        limits: values.limits === undefined
          ? undefined
          : parseLimits(values.limits),
      });
      return {
        id: created.id,
        key: created.key,
        name: created.name,
        balance: microsToUsd(created.balanceMicros),
        limits: created.limits ?? null,
      };
    }
    case "list":
      return (await listCallers(kv)).map(wire);
    case "show": {
      const id = oneId(positionals, command);
      const caller = await getCaller(kv, id);
      if (caller === null) throw new UsageError(`Caller key "${id}" not found`);
      return wire(caller);
    }
    case "topup": {
      const id = oneId(positionals, command);
      const amount = usd("amount", values.amount, true);
      try {
        return {
          id,
          balance: microsToUsd(await topUp(kv, id, usdToMicros(amount))),
        };
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          throw new UsageError(`Caller key "${id}" not found`);
        }
        if (error instanceof BalanceRangeError) {
          throw new UsageError(error.message);
        }
        throw error;
      }
    }
    case "limits": {
      if (positionals.length !== 2) {
        throw new UsageError(
          `"limits" takes a caller id and the limits as JSON (or none)`,
        );
      }
      const [id, text] = positionals;
      const caller = await setCallerLimits(
        kv,
        id,
        text === "none" ? null : parseLimits(text),
      );
      if (caller === null) throw new UsageError(`Caller key "${id}" not found`);
      return wire(caller);
    }
    case "model-set": {
      if (positionals.length !== 1) {
        throw new UsageError(`"model-set" takes one catalog entry as JSON`);
      }
      let raw: unknown;
      try {
        raw = JSON.parse(positionals[0]);
      } catch {
        throw new UsageError(
          `Invalid catalog entry: not JSON, e.g. '{"id":"m","provider":"openai","upstream":"m","routes":["chat"],"pricing":{"input":1,"output":2},"maxOutputTokens":4096}'`,
        );
      }
      try {
        return await putModel(kv, raw);
      } catch (error) {
        if (error instanceof CatalogEntryError) {
          throw new UsageError(error.message);
        }
        throw error;
      }
    }
    case "model-remove": {
      if (positionals.length !== 1) {
        throw new UsageError(`"model-remove" takes exactly one model id`);
      }
      await removeModel(kv, positionals[0]);
      return { id: positionals[0], deleted: true };
    }
    case "revoke": {
      const id = oneId(positionals, command);
      if (!(await revokeCaller(kv, id))) {
        throw new UsageError(`Caller key "${id}" not found`);
      }
      return { id, deleted: true };
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

/**
 * Opens the KV the commands work on, and says on stderr which one: its
 * path, and whether the file was created just now (then it is empty, and a
 * `list` printing `[]` says nothing about the gateway's callers).
 *
 * @param path `GATEWAY_KV_PATH`, or the default when it is unset.
 * @param fromEnv Whether `GATEWAY_KV_PATH` named it.
 * @returns The open KV.
 */
async function openStore(
  path: string,
  fromEnv: boolean,
  store: string | undefined,
): Promise<Deno.Kv> {
  if (store) {
    // GATEWAY_STORE wins over the KV path, as it does for the gateway.
    const opened = await openGatewayStore({ store, kvPath: path });
    console.error(`Store: ${opened.description} (GATEWAY_STORE)`);
    return opened.kv;
  }
  const local = path !== ":memory:" && !/^https?:\/\//.test(path);
  const existed = !local || await exists(path);
  const { kv } = await openGatewayStore({ kvPath: path });
  const where = local ? resolve(path) : path;
  const source = fromEnv
    ? "GATEWAY_KV_PATH"
    : "the default: GATEWAY_KV_PATH is unset";
  if (path === ":memory:") {
    console.error(
      `Store: KV in memory (${source}): empty, and gone when this command ends`,
    );
    return kv;
  }
  console.error(
    existed
      ? `Store: KV ${where} (${source})`
      : `Store: KV ${where} (${source}) did not exist and was created just now, empty; set GATEWAY_KV_PATH to the gateway's own KV`,
  );
  return kv;
}

/** Whether a file is there. */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * The command line: runs `args` and returns the exit code.
 *
 * @param args The command line, without the program name.
 * @returns 0 on success, 1 on a bad input.
 */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (
    command === undefined || command === "help" || command === "--help" ||
    command === "-h"
  ) {
    (command === undefined ? console.error : console.log)(USAGE);
    return command === undefined ? 1 : 0;
  }
  const fromEnv = Boolean(Deno.env.get("GATEWAY_KV_PATH"));
  let kv: Deno.Kv;
  try {
    kv = await openStore(
      Deno.env.get("GATEWAY_KV_PATH") || DEFAULT_KV_PATH,
      fromEnv,
      Deno.env.get("GATEWAY_STORE") || undefined,
    );
  } catch (error) {
    // An unreachable database: one line, never the URL's password.
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  try {
    const result = await run(kv, command, rest);
    console.log(JSON.stringify(result, null, 2));
    if (command === "create") {
      console.error("Store the key now: it is not shown again");
    }
    return 0;
  } catch (error) {
    // parseArgs throws TypeError (ERR_PARSE_ARGS_*) for unknown or valueless
    // flags; the stores throw RangeError for an invalid name or amount, and
    // BalanceRangeError for a balance out of range.
    if (
      error instanceof UsageError || error instanceof TypeError ||
      error instanceof RangeError || error instanceof BalanceRangeError
    ) {
      console.error(
        `${error.message.split("\n")[0]}; run "deno task keys help" for usage`,
      );
      return 1;
    }
    throw error;
  } finally {
    await closeStore(kv);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
