/**
 * Adding a provider is one file and one catalog entry: a copy of the
 * repository gets `gateway/upstream/providers/acme.ts` (an OpenAI-compatible
 * provider, written as a user would), its line in the registry's list and
 * one model in `catalog.json`; nothing else changes. The copy's own
 * simulator (which mounts every registered provider) plays Acme's API, the
 * copy's `gateway/main.ts` serves it, and the official OpenAI SDK calls the
 * model through the gateway, streamed and not: the answer arrives, the
 * caller is charged the catalog price of the reported usage, the traces
 * name provider "acme", and `GET /v1/models` lists the model. Meanwhile the
 * copy type-checks, so no table typed by provider name needed a line either.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { freePort } from "./_ports.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** What the gateway's `main.ts` needs besides `gateway/` itself. */
const ROOT_FILES = [
  "mod.ts",
  "_serve.ts",
  "_retry.ts",
  "deno.json",
  "deno.lock",
];

/** The whole provider, as a user writes it. */
const ACME_FILE = `/**
 * Acme: an OpenAI-compatible API, passed through.
 *
 * @module
 */
import { openAICompatible } from "./openai_compatible.ts";
import type { Provider } from "./provider.ts";

/** The Acme provider. */
export const acme: Provider<"acme"> = openAICompatible({
  name: "acme",
  defaultBaseUrl: "https://api.acme.example/v1",
});
`;

/** The one catalog entry: USD per million tokens. */
const ACME_MODEL = {
  id: "acme-large",
  provider: "acme",
  upstream: "acme-large-2026-01",
  routes: ["chat"],
  pricing: { input: 2, output: 8 },
  maxOutputTokens: 4096,
};

const ADMIN_TOKEN = "sixth-provider-admin-token";

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const source = `${from}/${entry.name}`;
    const target = `${to}/${entry.name}`;
    if (entry.isDirectory) await copyTree(source, target);
    else if (entry.isFile) await Deno.copyFile(source, target);
  }
}

/** Replaces `anchor` (which must occur exactly once) in a file of the copy. */
async function edit(
  path: string,
  anchor: string,
  replacement: string,
): Promise<void> {
  const text = await Deno.readTextFile(path);
  assert.equal(text.split(anchor).length, 2, `"${anchor}" once in ${path}`);
  await Deno.writeTextFile(path, text.replace(anchor, replacement));
}

/** A child process whose first output line matching `pattern` gives its address. */
class Child implements AsyncDisposable {
  readonly #process: Deno.ChildProcess;
  readonly #output: Promise<string>;
  #seen = "";

  constructor(args: string[], cwd: string, env: Record<string, string>) {
    this.#process = new Deno.Command(Deno.execPath(), {
      args,
      cwd,
      env: { ...env, NO_COLOR: "1" },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      for await (const text of stream.pipeThrough(new TextDecoderStream())) {
        this.#seen += text;
      }
    };
    this.#output = Promise.all([
      collect(this.#process.stdout),
      collect(this.#process.stderr),
    ]).then(() => this.#seen);
  }

  /**
   * Waits (at most 15 s) for output matching `pattern`.
   *
   * @returns The match's first group.
   * @throws {Error} With all the process said, if it exits or times out first.
   */
  async waitFor(pattern: RegExp): Promise<string> {
    let exited = false;
    const exit = this.#output.then(() => {
      exited = true;
    });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const match = pattern.exec(this.#seen);
      if (match) return match[1];
      if (exited || Date.now() > deadline) {
        throw new Error(
          `No output matching ${pattern} ${
            exited ? "before the process ended" : "within 15 s"
          }; it said:\n${this.#seen}`,
        );
      }
      await Promise.race([
        exit,
        new Promise((resolve) => setTimeout(resolve, 50)),
      ]);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    try {
      this.#process.kill("SIGTERM");
    } catch {
      // Already exited.
    }
    await this.#process.status;
    await this.#output;
  }
}

Deno.test({
  name:
    "a sixth provider is one file in providers/ and one catalog entry: the gateway serves, bills, traces and lists it",
  async fn() {
    const copy = await Deno.makeTempDir({ prefix: "mcpkit_sixth_" });
    let typeCheck: Promise<Deno.CommandOutput> | undefined;
    try {
      await copyTree(`${ROOT}gateway`, `${copy}/gateway`);
      for (const file of ROOT_FILES) {
        await Deno.copyFile(`${ROOT}${file}`, `${copy}/${file}`);
      }

      // What a user adds: the provider's file, its line in the registry's
      // list, and its model in the catalog.
      const providers = `${copy}/gateway/upstream/providers`;
      await Deno.writeTextFile(`${providers}/acme.ts`, ACME_FILE);
      await edit(
        `${providers}/mod.ts`,
        'import { xai } from "./xai.ts";\n',
        'import { xai } from "./xai.ts";\nimport { acme } from "./acme.ts";\n',
      );
      await edit(
        `${providers}/mod.ts`,
        "  openrouter,\n] as const;",
        "  openrouter,\n  acme,\n] as const;",
      );
      await edit(
        `${copy}/gateway/catalog.json`,
        '"models": [\n',
        `"models": [\n    ${JSON.stringify(ACME_MODEL)},\n`,
      );

      // Only what Deno needs to find its cache: no provider key or
      // gateway setting of this process leaks into the copy.
      const env = Object.fromEntries(
        ["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((name) => {
          const value = Deno.env.get(name);
          return value === undefined ? [] : [[name, value]];
        }),
      );
      // In parallel: the copy type-checks as it is.
      typeCheck = new Deno.Command(Deno.execPath(), {
        args: ["check", "gateway/main.ts", "gateway/simulator/main.ts"],
        cwd: copy,
        env: { ...env, NO_COLOR: "1" },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();

      // The copy's simulator mounts every registered provider, acme too.
      await using sim = new Child(
        ["run", "-A", "gateway/simulator/main.ts", "--port", "0"],
        copy,
        env,
      );
      const acmeBaseUrl = await sim.waitFor(/^ACME_BASE_URL=(\S+)$/m);
      assert.match(acmeBaseUrl, /\/acme\/v1$/);

      const port = freePort();
      await using gateway = new Child(["run", "-A", "gateway/main.ts"], copy, {
        ...env,
        PORT: String(port),
        HOST: "127.0.0.1",
        GATEWAY_KV_PATH: `${copy}/gateway.kv`,
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        ACME_API_KEYS: "sk-acme-1,sk-acme-2",
        ACME_BASE_URL: acmeBaseUrl,
      });
      const url = await gateway.waitFor(/listening on (http:\/\/\S+)/);
      assert.equal(url, `http://127.0.0.1:${port}`);

      const created = await fetch(`${url}/admin/keys`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ name: "acme user", credits: 10 }),
      });
      assert.equal(created.status, 201);
      const caller = await created.json() as { id: string; key: string };

      const models = await (await fetch(`${url}/v1/models`)).json() as {
        data: { id: string; available?: boolean }[];
      };
      const listed = models.data.find((model) => model.id === "acme-large");
      assert.ok(listed, "GET /v1/models lists acme-large");
      assert.equal(listed.available, true);

      const client = new OpenAI({
        baseURL: `${url}/v1`,
        apiKey: caller.key,
        maxRetries: 0,
      });
      const completion = await client.chat.completions.create({
        model: "acme-large",
        messages: [{ role: "user", content: "hello from a sixth provider" }],
      });
      assert.equal(
        completion.choices[0].message.content,
        "Echo: hello from a sixth provider",
      );
      assert.ok(completion.usage);

      const stream = await client.chat.completions.create({
        model: "acme-large",
        messages: [{ role: "user", content: "and streamed" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let streamed = "";
      let streamUsage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        streamed += chunk.choices[0]?.delta?.content ?? "";
        if (chunk.usage) streamUsage = chunk.usage;
      }
      assert.equal(streamed, "Echo: and streamed");
      assert.ok(streamUsage);

      const costOf = (usage: OpenAI.CompletionUsage) =>
        usage.prompt_tokens * ACME_MODEL.pricing.input +
        usage.completion_tokens * ACME_MODEL.pricing.output;
      const costs = [costOf(completion.usage), costOf(streamUsage)];
      assert.ok(costs.every((cost) => cost > 0));

      // The caller's traces wait for its pending settlements; a stream
      // settles just after its last byte.
      type Trace = {
        provider?: string;
        model: string;
        stream: boolean;
        status: number;
        costMicros: number;
        inputTokens: number;
        outputTokens: number;
      };
      let traces: Trace[] = [];
      for (const deadline = Date.now() + 5_000; Date.now() < deadline;) {
        const response = await fetch(`${url}/v1/traces`, {
          headers: { authorization: `Bearer ${caller.key}` },
        });
        assert.equal(response.status, 200);
        traces = (await response.json()).data;
        if (traces.length === 2) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(traces.length, 2);
      const byMode = (stream: boolean) =>
        traces.find((t) => t.stream === stream)!;
      for (
        const [trace, usage, cost] of [
          [byMode(false), completion.usage, costs[0]],
          [byMode(true), streamUsage, costs[1]],
        ] as const
      ) {
        assert.equal(trace.provider, "acme");
        assert.equal(trace.model, "acme-large");
        assert.equal(trace.status, 200);
        assert.equal(trace.inputTokens, usage.prompt_tokens);
        assert.equal(trace.outputTokens, usage.completion_tokens);
        assert.equal(trace.costMicros, cost);
      }

      const balance = await (await fetch(`${url}/admin/keys/${caller.id}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })).json() as { balance: number };
      assert.equal(
        Math.round(balance.balance * 1e6),
        10_000_000 - costs[0] - costs[1],
      );

      const checked = await typeCheck;
      const said = new TextDecoder().decode(checked.stderr);
      assert.equal(checked.code, 0, `deno check failed in the copy:\n${said}`);
    } finally {
      await typeCheck?.catch(() => undefined);
      await Deno.remove(copy, { recursive: true });
    }
  },
});
