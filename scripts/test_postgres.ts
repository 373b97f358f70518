/**
 * `deno task test:postgres [test files…]`: the gateway's state suites, which
 * run on Deno KV in `deno task test`, run again with every test gateway on
 * PostgreSQL. It starts a PostgreSQL (`tests/_postgres.ts`), and runs
 * `deno test` with the test harness (`tests/_gateway_harness.ts`) given
 * `GATEWAY_STORE` for a fresh database per gateway: an import map points the
 * harness at a copy of it that adds `...await storeEnvForTests()` to the
 * gateway's environment (unless a test asks for a KV file of its own), so
 * neither the suites nor the harness change.
 *
 * @module
 */
import { join } from "node:path";
import { POSTGRES_MISSING, startPostgres } from "../tests/_postgres.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The suites whose gateways keep state, run by default. */
export const STATE_SUITES: readonly string[] = [
  "tests/gateway_credits_test.ts",
  "tests/gateway_limits_test.ts",
  "tests/gateway_keypool_test.ts",
  "tests/gateway_traces_test.ts",
  "tests/gateway_usage_test.ts",
  "tests/gateway_admin_test.ts",
  "tests/gateway_auth_test.ts",
  "tests/gateway_holds_test.ts",
  "tests/gateway_abandoned_stream_test.ts",
  "tests/gateway_fallback_test.ts",
  "tests/reliability_gateway_faults_test.ts",
  "tests/gateway_trust_bodies_test.ts",
  "tests/gateway_priced_features_test.ts",
  "tests/gateway_holds_context_test.ts",
  "tests/gateway_output_limit_test.ts",
];

const HARNESS_LINE = 'GATEWAY_KV_PATH: options.kvPath ?? ":memory:",';

if (import.meta.main) {
  if (POSTGRES_MISSING) {
    // Skipped, saying why, as the suites' own PostgreSQL tests are.
    console.error(`test:postgres skipped: ${POSTGRES_MISSING}`);
    Deno.exit(0);
  }
  const suites = Deno.args.length > 0 ? Deno.args : STATE_SUITES;
  const harness = join(ROOT, "tests/_gateway_harness.ts");
  const text = await Deno.readTextFile(harness);
  if (!text.includes(HARNESS_LINE)) {
    console.error(
      `tests/_gateway_harness.ts no longer has the line \`${HARNESS_LINE}\` this script extends`,
    );
    Deno.exit(1);
  }
  const variant = join(ROOT, `tests/.harness_postgres_${Deno.pid}.ts`);
  const config = join(ROOT, `tests/.config_postgres_${Deno.pid}.json`);
  await Deno.writeTextFile(
    variant,
    `import { storeEnvForTests } from "./_postgres.ts";\n` +
      text.replace(
        HARNESS_LINE,
        `${HARNESS_LINE}\n    ...(options.kvPath ? {} : await storeEnvForTests()),`,
      ),
  );
  const deno = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  deno.imports = {
    ...deno.imports,
    [`file://${harness}`]: `file://${variant}`,
  };
  delete deno.tasks;
  delete deno.publish;
  await Deno.writeTextFile(config, JSON.stringify(deno));
  const pg = await startPostgres();
  let code = 1;
  try {
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["test", "-A", "--no-lock", "--config", config, ...suites],
      cwd: ROOT,
      env: { MCPKIT_TEST_POSTGRES: pg.url },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    code = run.code;
  } finally {
    await pg.stop();
    await Deno.remove(variant).catch(() => {});
    await Deno.remove(config).catch(() => {});
  }
  Deno.exit(code);
}
