/**
 * Start-up mistakes a newcomer makes are one line on stderr and exit 1: a
 * busy port for `deno task start` and `deno task demo`.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

for (const script of ["gateway/main.ts", "gateway/demo.ts"]) {
  Deno.test(`${script} on a busy port says which port and that PORT= changes it, in one line`, async () => {
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const port = (taken.addr as Deno.NetAddr).port;
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", script],
        cwd: ROOT,
        env: {
          PORT: String(port),
          HOST: "127.0.0.1",
          GATEWAY_KV_PATH: ":memory:",
          NO_COLOR: "1",
        },
        stdout: "null",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr).trim();
      assert.equal(output.code, 1, stderr);
      assert.equal(stderr.split("\n").length, 1, stderr);
      assert.match(stderr, new RegExp(`Port ${port} .*already in use`));
      assert.match(stderr, /PORT=/);
    } finally {
      taken.close();
    }
  });
}
