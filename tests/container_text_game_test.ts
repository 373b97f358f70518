/**
 * `examples/text_game/Dockerfile` built and run against a real Docker
 * daemon. Its compile step needs a denort runtime, which is downloaded
 * unless the base image has one (`DENORT_BIN` when the base is made): without
 * it the build stops at the `deps` stage (everything before `deno compile`)
 * and the environment runs from there, as the compiled binary would, behind
 * the same `tini-static`; with it the whole image is built and run. Either
 * way: HTTP on the host's loopback answers the SDK client, `health` says
 * so, `docker stop -t 15` runs the shutdown hook and exits 0; over stdio
 * (`--network none`) a game is played to a reward of 1.
 */
import assert from "node:assert/strict";
import { playByBisection } from "../examples/text_game/agent.ts";
import {
  buildImage,
  DOCKER_MISSING,
  dockerOk,
  reportSkip,
  TEST_LABEL,
} from "./_docker.ts";
import { freePort } from "./_ports.ts";
import {
  Client,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from "./_mcp_client.ts";

reportSkip();
const ignore = DOCKER_MISSING !== undefined;
const COMPILED = Deno.env.get("DENORT_BIN") !== undefined;
const IMAGE = COMPILED ? "mcpkit-test/text-game" : "mcpkit-test/text-game-deps";
/** How the image is started: the runtime's own entrypoint, or the deps stage's equivalent. */
const ENTRY: string[] = COMPILED ? [] : [
  "--entrypoint",
  "/usr/bin/tini-static",
];
const COMMAND: string[] = COMPILED
  ? []
  : ["--", "deno", "run", "-A", "--cached-only", "examples/text_game/main.ts"];

async function build(): Promise<void> {
  if (COMPILED) {
    await buildImage(IMAGE, "examples/text_game/Dockerfile");
    return;
  }
  console.log(
    "No DENORT_BIN: building examples/text_game/Dockerfile up to its deps stage; `deno compile` and the runtime stage are skipped",
  );
  await buildImage(IMAGE, "examples/text_game/Dockerfile", { target: "deps" });
}

Deno.test({
  name:
    "the text game image answers over HTTP, passes its health command, and docker stop -t 15 runs the shutdown hook and exits 0",
  ignore,
  sanitizeResources: false,
  async fn() {
    await build();
    const port = freePort();
    const env = ["-e", `MCP_PORT=${port}`, "-e", "MCP_HOST=127.0.0.1"];
    const id = await dockerOk([
      "run",
      "-d",
      "--network",
      "host",
      "--label",
      TEST_LABEL,
      ...env,
      ...ENTRY,
      IMAGE,
      ...COMMAND,
      "http",
    ]);
    try {
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      const client = new Client({ name: "container-test", version: "1.0.0" });
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await client.connect(new StreamableHTTPClientTransport(url));
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      assert.ok(tools.includes("guess"), tools.join(", "));
      await client.close();

      const health = await new Deno.Command("docker", {
        args: [
          "exec",
          id,
          ...(COMPILED
            ? ["/usr/local/bin/text-game"]
            : ["deno", "run", "-A", "examples/text_game/main.ts"]),
          "health",
        ],
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(
        health.success,
        `health: ${new TextDecoder().decode(health.stderr)}`,
      );
      const pid1 = await dockerOk(["exec", id, "cat", "/proc/1/cmdline"]);
      assert.match(pid1.split("\0")[0], /tini/, "tini is PID 1");

      await dockerOk(["stop", "-t", "15", id]);
      assert.equal(
        await dockerOk(["inspect", "--format", "{{.State.ExitCode}}", id]),
        "0",
      );
      const logs = await new Deno.Command("docker", {
        args: ["logs", id],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.match(
        new TextDecoder().decode(logs.stderr),
        /text-game: shutting down after 0 game\(s\)/,
      );
    } finally {
      await dockerOk(["rm", "-f", id]).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "the text game image over stdio with no network plays a game to a reward of 1",
  ignore,
  sanitizeResources: false,
  async fn() {
    await build();
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
          "--label",
          TEST_LABEL,
          ...ENTRY,
          IMAGE,
          ...COMMAND,
          "stdio",
        ],
        stderr: "ignore",
      }),
    );
    try {
      await client.callTool({
        name: "setup",
        arguments: { name: "start", arguments: { target: 37, max: 100 } },
      });
      const played = await playByBisection(client);
      assert.equal(played.solved, true, played.guesses.join(", "));
      const scored = await client.callTool({
        name: "evaluate",
        arguments: { name: "solved" },
      });
      assert.equal(
        (scored.structuredContent as { reward: number }).reward,
        1,
      );
    } finally {
      await client.close();
    }
  },
});
