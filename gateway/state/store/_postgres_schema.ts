/**
 * The PostgreSQL store's schema: the table, the one-round-trip commit
 * function, and their migration at start-up under a transaction-scoped
 * advisory lock (so several gateways starting at once migrate once).
 * Private to `store/`.
 *
 * @module
 */
import type postgres from "postgres";

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = 1;

// An arbitrary constant naming the migration lock among advisory locks.
const MIGRATION_LOCK = 7_240_024;

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE gateway_kv (
     key bytea PRIMARY KEY,
     value bytea,
     u64 numeric(20, 0),
     version bigint NOT NULL,
     expires_at bigint
   );
   CREATE INDEX gateway_kv_expires ON gateway_kv (expires_at)
     WHERE expires_at IS NOT NULL;
   CREATE SEQUENCE gateway_kv_version;
   CREATE FUNCTION gateway_kv_commit(ops jsonb, now_ms bigint) RETURNS bigint
   LANGUAGE plpgsql AS $fn$
   DECLARE
     h bigint;
     c jsonb;
     m jsonb;
     cur bigint;
     v bigint;
     k bytea;
     operand numeric;
     prior numeric;
     is_u64 boolean;
   BEGIN
     FOR h IN SELECT DISTINCT hashtextextended(x->>'k', 0)
       FROM jsonb_array_elements((ops->'c') || (ops->'m')) x ORDER BY 1 LOOP
       PERFORM pg_advisory_xact_lock(h);
     END LOOP;
     FOR c IN SELECT * FROM jsonb_array_elements(ops->'c') LOOP
       cur := NULL;
       SELECT version INTO cur FROM gateway_kv
         WHERE key = decode(c->>'k', 'hex')
           AND (expires_at IS NULL OR expires_at > now_ms);
       IF cur IS DISTINCT FROM (c->>'v')::bigint THEN RETURN NULL; END IF;
     END LOOP;
     v := nextval('gateway_kv_version');
     FOR m IN SELECT * FROM jsonb_array_elements(ops->'m') LOOP
       k := decode(m->>'k', 'hex');
       IF m->>'t' = 'set' THEN
         INSERT INTO gateway_kv (key, value, u64, version, expires_at)
           VALUES (k, decode(m->>'v', 'hex'), (m->>'u')::numeric, v,
                   (m->>'x')::bigint)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value,
             u64 = excluded.u64, version = v, expires_at = excluded.expires_at;
       ELSIF m->>'t' = 'delete' THEN
         DELETE FROM gateway_kv WHERE key = k;
       ELSE
         operand := (m->>'u')::numeric;
         prior := NULL;
         is_u64 := NULL;
         SELECT u64, u64 IS NOT NULL INTO prior, is_u64 FROM gateway_kv
           WHERE key = k AND (expires_at IS NULL OR expires_at > now_ms);
         IF is_u64 = false THEN
           RAISE EXCEPTION 'Failed to perform ''%'' mutation on a non-U64 value', m->>'t';
         END IF;
         operand := CASE
           WHEN prior IS NULL THEN operand
           WHEN m->>'t' = 'sum' THEN mod(prior + operand, 18446744073709551616)
           WHEN m->>'t' = 'min' THEN least(prior, operand)
           ELSE greatest(prior, operand) END;
         INSERT INTO gateway_kv (key, value, u64, version, expires_at)
           VALUES (k, NULL, operand, v, NULL)
           ON CONFLICT (key) DO UPDATE SET value = NULL, u64 = operand,
             version = v, expires_at = NULL;
       END IF;
     END LOOP;
     RETURN v;
   END
   $fn$;`,
];

/**
 * Creates or migrates the schema to {@linkcode SCHEMA_VERSION}.
 *
 * @param sql The client.
 * @throws {Error} When the database's schema is newer than this code.
 */
export async function migrate(sql: postgres.Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS gateway_schema (version integer NOT NULL)`;
    const [row] = await tx<{ version: number }[]>`
      SELECT max(version) AS version FROM gateway_schema`;
    const current = row?.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(
        `The PostgreSQL store's schema is version ${current}, newer than this gateway's ${SCHEMA_VERSION}: upgrade the gateway`,
      );
    }
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
      await tx.unsafe(MIGRATIONS[version - 1]);
      await tx`INSERT INTO gateway_schema (version) VALUES (${version})`;
    }
  });
}
