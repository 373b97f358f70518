import assert from "node:assert/strict";
import {
  DockerRuntime,
  parseDockerImage,
  parseMemory,
  runnerGone,
  runnerId,
} from "./docker.ts";
import { dockerTarget } from "../cli/docker_options.ts";
import { UsageError } from "../cli/options.ts";

Deno.test("parseDockerImage() reads docker://name[:tag] and refuses what could pass as an option", () => {
  assert.equal(parseDockerImage("docker://desktop-env"), "desktop-env");
  assert.equal(
    parseDockerImage("docker://registry.local:5000/team/env:1.2"),
    "registry.local:5000/team/env:1.2",
  );
  for (
    const bad of ["docker://", "docker://-v", "docker://A B", "docker://x//y"]
  ) {
    assert.throws(() => parseDockerImage(bad), TypeError, bad);
  }
});

Deno.test("parseMemory() reads Docker's sizes and refuses less than 6m", () => {
  assert.equal(parseMemory("2g"), 2 * 1024 ** 3);
  assert.equal(parseMemory("512m"), 512 * 1024 ** 2);
  assert.throws(() => parseMemory("1m"), TypeError);
  assert.throws(() => parseMemory("lots"), TypeError);
});

Deno.test("runnerGone() judges this machine's runners only: gone when the pid ended or was reused", async () => {
  assert.equal(runnerGone(runnerId()), false);
  const ended = new Deno.Command("true").spawn();
  await ended.status;
  assert.equal(runnerGone(`${Deno.hostname()}/${ended.pid}/1`), true);
  const [host, pid] = runnerId().split("/");
  assert.equal(runnerGone(`${host}/${pid}/not-its-start`), true);
  assert.equal(runnerGone(`another-machine/${ended.pid}/1`), false);
  assert.equal(runnerGone("garbage"), false);
});

Deno.test("dockerTarget() builds a runtime from docker:// and the --docker-* flags, one line per mistake", () => {
  const target = dockerTarget("docker://desktop-env", [], {
    "docker-host": ["unix:///run/a.sock", "tcp://10.0.0.2:2375"],
    "docker-cpus": "0.5",
    "docker-memory": "1g",
    "docker-network-allow": "host",
  });
  assert.ok(target && "runtime" in target);
  assert.ok(target.runtime instanceof DockerRuntime);
  assert.equal(target.runtime.name, "docker://desktop-env");
  assert.equal(dockerTarget("http://127.0.0.1:8765/mcp", [], {}), undefined);
  const mistakes: [string, Record<string, unknown>][] = [
    ["docker://desktop-env", { "docker-cpus": "0" }],
    ["docker://desktop-env", { "docker-memory": "1k" }],
    ["docker://desktop-env", { "docker-network-allow": "--privileged" }],
    ["docker://desktop-env", { "docker-network-allow": "bridge" }],
    ["http://127.0.0.1:8765/mcp", { "docker-network-allow": "host" }],
    ["docker://desktop-env", { "docker-host": ["/var/run/docker.sock"] }],
    ["docker://-it", {}],
    ["http://127.0.0.1:8765/mcp", { "docker-cpus": "2" }],
  ];
  for (const [spec, flags] of mistakes) {
    assert.throws(
      () => dockerTarget(spec, [], flags),
      (error: Error) =>
        error instanceof UsageError && !error.message.includes("\n"),
      `${spec} ${JSON.stringify(flags)}`,
    );
  }
});

Deno.test("DockerRuntime.launch() says which daemon when none answers", async () => {
  const runtime = new DockerRuntime({
    image: "desktop-env",
    hosts: ["unix:///nonexistent/docker.sock"],
  });
  await assert.rejects(
    () => runtime.launch([]),
    /No Docker daemon answers \(unix:\/\/\/nonexistent\/docker\.sock\)/,
  );
});

Deno.test("DockerRuntime.networkRefusal() gives none always, host only when allowed, a bridge never", async () => {
  const closed = new DockerRuntime({ image: "desktop-env" });
  const open = new DockerRuntime({
    image: "desktop-env",
    allowNetworks: ["host"],
  });
  assert.equal(closed.networkRefusal("none"), undefined);
  assert.equal(open.networkRefusal("host"), undefined);
  assert.match(
    closed.networkRefusal("host") ?? "",
    /^The scenario asks for the host network, which docker:\/\/desktop-env runs get only when the operator allows it: add --docker-network-allow host$/,
  );
  for (const runtime of [closed, open]) {
    assert.match(runtime.networkRefusal("bridge") ?? "", /"bridge"/);
  }
  const hostile = closed.networkRefusal("x\n".repeat(100)) ?? "";
  assert.ok(!hostile.includes("\n") && hostile.length < 200, hostile);
  // Refused before any daemon is asked: no container starts.
  await assert.rejects(() => closed.launch([], "host"), TypeError);
});
