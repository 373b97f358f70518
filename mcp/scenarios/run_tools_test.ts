import assert from "node:assert/strict";
import { RunToolFilters } from "./run_tools.ts";

Deno.test("RunToolFilters refuses excluded tools and tools outside allowedTools for that run only, until the run's filters go", () => {
  const filters = new RunToolFilters();
  filters.set("run:a", "guess", { excludeTools: ["debug_*"] });
  filters.set("run:a", "other", { allowedTools: ["vis*", "debug_*"] });
  filters.set("run:b", "plain", {});
  assert.match(filters.refusal("run:a", "debug_dump") ?? "", /"guess"/);
  assert.match(filters.refusal("run:a", "peek") ?? "", /"other"/);
  assert.equal(filters.refusal("run:a", "visible"), undefined);
  assert.equal(filters.refusal("run:b", "debug_dump"), undefined);
  assert.equal(filters.size, 1, "a scenario without filters keeps nothing");
  filters.delete("run:a", "guess");
  filters.delete("run:a", "other");
  assert.equal(filters.refusal("run:a", "debug_dump"), undefined);
  assert.equal(filters.size, 0);
});
