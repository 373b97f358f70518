/**
 * The shipped reverse-proxy configuration (`deploy/nginx.conf`), run as it is
 * with Debian's nginx in front of a real gateway and a real environment:
 * calls and streams pass, slow clients are closed, oversized bodies are
 * refused before they are read. Skipped, saying so, where nginx is missing.
 */
import assert from "node:assert/strict";
import { freePort } from "./_ports.ts";
import { startHarness } from "./_gateway_harness.ts";
import { callBody, readSse } from "./_gateway_routes.ts";

const CONFIG = new URL("../deploy/nginx.conf", import.meta.url).pathname;
const ROOT = new URL("../", import.meta.url).pathname;
const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/** Runs nginx with the shipped config in front of `upstream`; returns its URL. */
async function startNginx(
  upstream: string,
): Promise<{ url: string; port: number } & AsyncDisposable> {
  const prefix = await Deno.makeTempDir();
  const port = freePort();
  const config = (await Deno.readTextFile(CONFIG))
    .replaceAll("{{LISTEN}}", `127.0.0.1:${port}`)
    .replaceAll("{{UPSTREAM}}", upstream)
    .replaceAll("{{PREFIX}}", prefix);
  await Deno.writeTextFile(`${prefix}/nginx.conf`, config);
  const process = new Deno.Command(NGINX!, {
    args: [
      "-p",
      prefix,
      "-e",
      `${prefix}/error.log`,
      "-c",
      `${prefix}/nginx.conf`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      break;
    } catch {
      assert.ok(Date.now() < deadline, "nginx did not start");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    [Symbol.asyncDispose]: async () => {
      process.kill("SIGQUIT");
      await process.status;
      await Deno.remove(prefix, { recursive: true });
    },
  };
}

const ignore = NGINX === undefined;
if (ignore) {
  console.error(
    "deploy_nginx_test: skipped, no nginx at /usr/sbin/nginx (apt-get install nginx-light)",
  );
}

Deno.test({
  name:
    `deploy/nginx.conf in front of a gateway passes calls and streams, closes slow clients and refuses huge bodies${
      ignore ? " (skipped: nginx is not installed)" : ""
    }`,
  ignore,
  async fn() {
    await using h = await startHarness();
    await using nginx = await startNginx(new URL(h.url).host);
    const headers = { "content-type": "application/json", ...h.auth() };
    const call = await fetch(`${nginx.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify(callBody("chat", "gpt-4o-mini", false)),
    });
    assert.equal(call.status, 200);
    assert.ok(call.headers.get("x-gateway-cost"));
    await call.body?.cancel();
    const stream = await fetch(`${nginx.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify(callBody("chat", "claude-haiku-4-5", true)),
    });
    const events = await readSse(stream);
    assert.equal(events.at(-1)?.data, "[DONE]");

    // A body over the limit is refused by nginx without reaching the gateway.
    const before = h.sim.requests.length;
    const huge = await fetch(`${nginx.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...headers, "content-length": String(40 * 1024 * 1024) },
      body: new Uint8Array(40 * 1024 * 1024),
    });
    assert.equal(huge.status, 413);
    await huge.body?.cancel();
    assert.equal(h.sim.requests.length, before);

    // A client that sends half a request line and then nothing is closed.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slow = await Deno.connect({
      hostname: "127.0.0.1",
      port: nginx.port,
    });
    await slow.write(new TextEncoder().encode("GET /health HTTP/1.1\r\n"));
    const closed = await Promise.race([
      // A reset (reset_timedout_connection) is a close too.
      slow.read(new Uint8Array(1024)).then(
        (n) => n === null ? "closed" : "data",
        () => "closed",
      ),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve("open"), 15_000);
      }),
    ]);
    clearTimeout(timer);
    slow.close();
    assert.equal(
      closed,
      "closed",
      "nginx closes a client that stalls in its headers",
    );
  },
});

Deno.test({
  name:
    `deploy/nginx.conf in front of an MCPServer environment serves MCP over Streamable HTTP${
      ignore ? " (skipped: nginx is not installed)" : ""
    }`,
  ignore,
  async fn() {
    const port = freePort();
    const environment = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "examples/text_game/main.ts", "http"],
      cwd: ROOT,
      env: { MCP_PORT: String(port), MCP_HOST: "127.0.0.1" },
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await using nginx = await startNginx(`127.0.0.1:${port}`);
      const deadline = Date.now() + 20_000;
      let response: Response;
      for (;;) {
        response = await fetch(`${nginx.url}/mcp`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: {
              protocolVersion: "2025-06-18",
              capabilities: {},
              clientInfo: { name: "nginx-test", version: "1.0.0" },
            },
          }),
        });
        if (response.status === 200) break;
        await response.body?.cancel();
        assert.ok(Date.now() < deadline, `status ${response.status}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.ok(response.headers.get("mcp-session-id"));
      assert.match(await response.text(), /serverInfo/);
    } finally {
      environment.kill("SIGTERM");
      await environment.status;
    }
  },
});
