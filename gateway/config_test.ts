import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "./config.ts";

Deno.test("parseConfig() refuses a provider key that cannot be sent as a header, naming the variable and never the key", () => {
  const placeholder = "sk-ant-\u2026";
  assert.throws(
    () => parseConfig({ env: { ANTHROPIC_API_KEY: placeholder } }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /ANTHROPIC_API_KEY\b/);
      assert.doesNotMatch(error.message, /sk-ant/);
      assert.equal(error.message.split("\n").length, 1);
      return true;
    },
  );
  assert.throws(
    () => parseConfig({ env: { OPENAI_API_KEYS: "sk-good,sk bad" } }),
    /OPENAI_API_KEYS/,
  );
  const config = parseConfig({ env: { XAI_API_KEYS: "xai-a, xai-b" } });
  assert.deepEqual(config.providers.xai.apiKeys, ["xai-a", "xai-b"]);
});
