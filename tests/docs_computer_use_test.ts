/**
 * docs/computer-use.md lists every catalog model that has computer use, with
 * its tool and beta header as the catalog has them, and cites each source
 * the catalog gives for it.
 */
import assert from "node:assert/strict";
import { DEFAULT_CATALOG } from "../gateway/state/catalog.ts";

const DOC = await Deno.readTextFile(
  new URL("../docs/computer-use.md", import.meta.url),
);

Deno.test("docs/computer-use.md has a row per computer-use model with the catalog's tool and beta, and cites its sources", () => {
  const rows = DOC.split("\n").filter((line) => line.startsWith("| `"));
  for (const model of DEFAULT_CATALOG) {
    if (!model.computerUse) continue;
    const row = rows.find((line) => line.startsWith(`| \`${model.id}\``));
    assert.ok(row, `no row for ${model.id}`);
    const cells = row.split("|").map((cell) => cell.trim());
    assert.equal(cells[4], `\`${model.computerUse.tool}\``, model.id);
    assert.equal(
      cells[5],
      model.computerUse.beta ? `\`${model.computerUse.beta}\`` : "none",
      model.id,
    );
    for (const source of model.sources ?? []) {
      assert.ok(DOC.includes(source), `${model.id}: ${source} is not cited`);
    }
  }
});
