import assert from "node:assert/strict";
import { startDemo } from "./demo.ts";

Deno.test("startDemo() listens on 127.0.0.1 unless HOST asks otherwise, since it prints an admin token", async () => {
  const host = Deno.env.get("HOST");
  Deno.env.delete("HOST");
  try {
    const demo = await startDemo({ quiet: true, port: 0 });
    try {
      assert.match(demo.gateway.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${demo.gateway.url}/health`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    } finally {
      await demo.close();
    }
  } finally {
    if (host !== undefined) Deno.env.set("HOST", host);
  }
});
