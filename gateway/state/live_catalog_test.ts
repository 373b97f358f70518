import assert from "node:assert/strict";
import { putModel, readCatalog } from "./live_catalog.ts";
import { CatalogEntryError, DEFAULT_CATALOG } from "./catalog.ts";
import { catalogChangeKey } from "./kv_keys.ts";
import type { CatalogEntry } from "./catalog.ts";

const model: CatalogEntry = {
  id: "house-model",
  provider: "openai",
  upstream: "gpt-4o-mini",
  routes: ["chat"],
  pricing: { input: 1, output: 2 },
  maxOutputTokens: 1024,
};

Deno.test("putModel() refuses an alias or id another model already answers to, naming the field", async () => {
  using kv = await Deno.openKv(":memory:");
  const refusal = (raw: CatalogEntry, field: string, pattern: RegExp) =>
    assert.rejects(
      putModel(kv, raw),
      (error: unknown) =>
        error instanceof CatalogEntryError && error.field === field &&
        pattern.test(error.message),
    );
  await refusal(
    { ...model, aliases: ["own-name", "gpt-4o"] },
    "aliases[1]",
    /"aliases\[1\]" names "gpt-4o", which model "gpt-4o" already answers to/,
  );
  // The seed's alias is taken too: it reaches `operator`.
  await refusal(
    { ...model, id: "computer-use-preview" },
    "id",
    /which model "operator" already answers to/,
  );
  await putModel(kv, { ...model, aliases: ["house-alias"] });
  await refusal(
    { ...model, id: "second", aliases: ["house-alias"] },
    "aliases[0]",
    /which model "house-model" already answers to/,
  );
  // A model may keep (or change) its own aliases.
  await putModel(kv, { ...model, aliases: ["house-alias", "more"] });
  // Replacing a seed model keeps its name and may drop its alias.
  await putModel(kv, {
    ...DEFAULT_CATALOG.find((entry) => entry.id === "operator")!,
    aliases: undefined,
  });
  await putModel(kv, {
    ...model,
    id: "cup",
    aliases: ["computer-use-preview"],
  });
});

Deno.test("readCatalog() leaves out a stored entry whose name another model took first, and reports it", async () => {
  using kv = await Deno.openKv(":memory:");
  // Two puts that raced past putModel's check, written as they would land.
  await kv.set(catalogChangeKey("first"), {
    entry: { ...model, id: "first", aliases: ["shared"] },
  });
  await kv.set(catalogChangeKey("second"), {
    entry: { ...model, id: "second", aliases: ["shared"] },
  });
  // A replacement of a seed model that claims a seed model's name keeps its seed entry.
  await kv.set(catalogChangeKey("gpt-4o"), {
    entry: {
      ...DEFAULT_CATALOG.find((entry) => entry.id === "gpt-4o")!,
      aliases: ["gpt-4o-mini"],
      pricing: { input: 99, output: 99 },
    },
  });
  const ignored: string[] = [];
  const entries = await readCatalog(kv, DEFAULT_CATALOG, (id, error) => {
    ignored.push(`${id}: ${error.field}`);
  });
  assert.deepEqual(ignored.sort(), [
    "gpt-4o: aliases[0]",
    "second: aliases[0]",
  ]);
  const ids = entries.map((entry) => entry.id);
  assert.ok(ids.includes("first") && !ids.includes("second"));
  assert.equal(
    entries.find((entry) => entry.id === "gpt-4o")?.pricing.input,
    2.5,
  );
});
