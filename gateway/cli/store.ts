/**
 * `deno task store copy <from-kv-path> <postgres-url> [--force]`: moves a
 * stopped installation's state from a Deno KV file to an empty PostgreSQL
 * database (see `copy.ts`), then prints one line saying what moved.
 *
 * @module
 */
import { copyKvToPostgres } from "../state/store/copy.ts";
import { journalDirFor } from "../state/credits/journal.ts";
import { describePostgresUrl } from "../state/store/mod.ts";
import { openPostgresStore } from "../state/store/postgres.ts";

const USAGE =
  `Usage: deno task store copy <from-kv-path> <postgres-url> [--force]

Copies every record of a gateway's Deno KV file into an empty PostgreSQL
database, then checks every caller's balance on both sides. Stop every
gateway on the KV file first; --force copies past a lease that has not
expired (one a crashed gateway left).`;

/**
 * Runs the command.
 *
 * @param args The command-line arguments.
 * @returns The exit code.
 */
export async function main(args: readonly string[]): Promise<number> {
  const force = args.includes("--force");
  const rest = args.filter((arg) => arg !== "--force");
  if (rest[0] === "--help" || rest[0] === "-h") {
    console.log(USAGE);
    return 0;
  }
  if (rest.length !== 3 || rest[0] !== "copy") {
    console.error(USAGE);
    return 2;
  }
  const [, from, to] = rest;
  if (!/^postgres(ql)?:\/\//.test(to)) {
    console.error(`The target must be a postgres:// URL, not "${to}"`);
    return 2;
  }
  try {
    await Deno.stat(from);
  } catch {
    console.error(`No KV file at "${from}"`);
    return 1;
  }
  const kv = await Deno.openKv(from);
  let target;
  try {
    target = await openPostgresStore(to);
  } catch (error) {
    kv.close();
    console.error(
      `Cannot open PostgreSQL at ${describePostgresUrl(to)}: ${
        (error as Error).message
      }`,
    );
    return 1;
  }
  try {
    const report = await copyKvToPostgres(kv, target, {
      force,
      journalDir: journalDirFor({
        kvPath: from,
        journalDir: Deno.env.get("GATEWAY_JOURNAL_DIR") || undefined,
      }),
    });
    console.log(
      `Copied ${report.records} records from ${from} to PostgreSQL ${
        describePostgresUrl(to)
      }: ${report.callers} callers' ledgers and balances equal on both sides${
        report.leasesFolded > 0
          ? `, ${report.leasesFolded} leases (${report.leasedMicros} micro-USD) returned to their callers' credits`
          : ""
      }`,
    );
    return 0;
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  } finally {
    kv.close();
    await target.end();
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
