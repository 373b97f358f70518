/**
 * `examples/desktop/Dockerfile` built and run against a real Docker daemon:
 * over HTTP (on the host's loopback: the daemon has no bridge) it serves
 * `/dev` and `/mcp` to the official SDK client, `tini` is PID 1, the health
 * check turns healthy, and `docker stop -t 15` runs the shutdown hook and
 * exits 0 well within the grace period; over stdio (`docker run -i
 * --network none … stdio`) the SDK client lists its tools and the container
 * is gone once the client closes.
 */
import assert from "node:assert/strict";
import {
  buildImage,
  DOCKER_MISSING,
  dockerOk,
  reportSkip,
  TEST_LABEL,
  until,
} from "./_docker.ts";
import { freePort } from "./_ports.ts";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";

reportSkip();
const ignore = DOCKER_MISSING !== undefined;
const IMAGE = "mcpkit-test/desktop";

Deno.test({
  name:
    "the desktop image serves /dev and /mcp over HTTP behind tini, turns healthy, and docker stop -t 15 runs the shutdown hook and exits 0",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const port = freePort();
    const id = await dockerOk([
      "run",
      "-d",
      "--network",
      "host",
      "--label",
      TEST_LABEL,
      "-e",
      `MCP_PORT=${port}`,
      "-e",
      "MCP_HOST=127.0.0.1",
      IMAGE,
    ]);
    try {
      const base = `http://127.0.0.1:${port}`;
      await until("the container to answer on /dev", async () => {
        try {
          const response = await fetch(`${base}/dev`);
          await response.body?.cancel();
          return response.status === 200;
        } catch {
          return false;
        }
      }, 60_000);
      const page = await (await fetch(`${base}/dev`)).text();
      assert.match(page, /desktop/i, "the /dev page names the environment");

      const client = new Client({ name: "container-test", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/mcp`)),
      );
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(tools.includes("computer"), `tools: ${tools.join(", ")}`);
      await client.close();

      const pid1 = await dockerOk(["exec", id, "cat", "/proc/1/cmdline"]);
      assert.match(pid1.split("\0")[0], /tini$/, "tini is PID 1");

      // The image's own health check, run as Docker runs it.
      await until("the health check to pass", async () =>
        await dockerOk([
          "inspect",
          "--format",
          "{{.State.Health.Status}}",
          id,
        ]) === "healthy", 45_000);

      const started = performance.now();
      await dockerOk(["stop", "-t", "15", id]);
      const stopMs = performance.now() - started;
      const exit = await dockerOk([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        id,
      ]);
      assert.equal(exit, "0", "docker stop ends it with exit 0");
      assert.ok(stopMs < 15_000, `stopped in ${Math.round(stopMs)} ms`);
      const logs = await new Deno.Command("docker", {
        args: ["logs", id],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(logs.stderr);
      assert.match(
        said,
        /desktop: shutting down: closing the shell, Chromium and Xvfb/,
        `the shutdown hook's line is in the log:\n${said}`,
      );
    } finally {
      await dockerOk(["rm", "-f", id]).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "the desktop image over stdio (docker run -i --network none … stdio) answers the SDK client and is removed when it closes",
  ignore,
  sanitizeResources: false,
  async fn() {
    await buildImage(IMAGE, "examples/desktop/Dockerfile");
    const name = `mcpkit-test-stdio-${crypto.randomUUID().slice(0, 8)}`;
    const client = new Client({ name: "container-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: "docker",
        args: [
          "run",
          "--rm",
          "-i",
          "--network",
          "none",
          "--name",
          name,
          "--label",
          TEST_LABEL,
          IMAGE,
          "stdio",
        ],
        stderr: "ignore",
      }),
    );
    try {
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(tools.includes("computer"), `tools: ${tools.join(", ")}`);
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes("desktop:fill_form"), prompts.join(", "));
    } finally {
      await client.close();
    }
    await until(
      "the container to be removed",
      async () =>
        (await dockerOk(["ps", "-aq", "--filter", `name=${name}`])) === "",
      20_000,
    );
  },
});
