import assert from "node:assert/strict";
import { BodyBudget } from "./body_guard.ts";

Deno.test("BodyBudget lets one body in whatever its size, more only within the bound, per caller", () => {
  const budget = new BodyBudget(100);
  assert.equal(budget.take("a", 500), true, "the first body always gets in");
  assert.equal(budget.take("a", 1), false);
  assert.equal(budget.take("b", 60), true);
  assert.equal(budget.take("b", 40), true);
  assert.equal(budget.take("b", 1), false);
  budget.give("a", 500);
  assert.equal(budget.inFlight("a"), 0);
  assert.equal(budget.take("a", 1), true);
  budget.give("b", 60);
  assert.equal(budget.inFlight("b"), 40);
});
