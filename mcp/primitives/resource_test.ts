import assert from "node:assert/strict";
import { LenientUriTemplate, normalizeResourceResult } from "./resource.ts";

const URI = new URL("status://env");

Deno.test("normalizeResourceResult() serialises values to JSON", () => {
  assert.deepEqual(normalizeResourceResult(URI, { ok: true }), {
    contents: [{
      uri: "status://env",
      mimeType: "application/json",
      text: '{\n  "ok": true\n}',
    }],
  });
});

Deno.test("normalizeResourceResult() keeps strings as text, bytes as blobs, resource results as they are", () => {
  assert.deepEqual(
    normalizeResourceResult(URI, "hi", "text/markdown").contents[0],
    {
      uri: "status://env",
      mimeType: "text/markdown",
      text: "hi",
    },
  );
  assert.deepEqual(
    normalizeResourceResult(URI, new Uint8Array([104, 105])).contents[0],
    {
      uri: "status://env",
      mimeType: "application/octet-stream",
      blob: "aGk=",
    },
  );
  const result = { contents: [{ uri: "status://env", text: "as is" }] };
  assert.equal(normalizeResourceResult(URI, result), result);
});

Deno.test("LenientUriTemplate matches strictly first, then lets variables span slashes", () => {
  const template = new LenientUriTemplate("file://{path}");
  assert.deepEqual(template.match("file://notes.txt"), { path: "notes.txt" });
  assert.deepEqual(template.match("file://notes.txt/"), { path: "notes.txt" });
  assert.deepEqual(template.match("file:///var/log/a.log"), {
    path: "/var/log/a.log",
  });
  assert.equal(template.match("http://x"), null);
  const two = new LenientUriTemplate("repo://{owner}/{name}/issues");
  assert.deepEqual(two.match("repo://deno/std/issues"), {
    owner: "deno",
    name: "std",
  });
});
