import assert from "node:assert/strict";
import { ConnectionWatch, socketStates } from "./connection_watch.ts";

Deno.test("socketStates() reads each socket's state by local and remote port, IPv4 and IPv6", () => {
  const header = "  sl  local_address rem_address   st tx_queue rx_queue";
  const states = socketStates([
    `${header}\n   0: 0100007F:1F90 0100007F:C350 08 00000000:00000000\n`,
    `${header}\n   0: 0000000000000000FFFF00000100007F:1F91 0000000000000000FFFF00000100007F:C351 01 0\n`,
  ]);
  assert.equal(states.get("8080:50000"), "08");
  assert.equal(states.get("8081:50001"), "01");
  assert.equal(states.size, 2);
});

Deno.test({
  name:
    "ConnectionWatch tells when a client closes a connection the server holds open, and not before",
  ignore: Deno.build.os !== "linux",
  async fn() {
    using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    const client = await Deno.connect({ hostname: "127.0.0.1", port });
    // Held open (and closed at the end) by the server side, as a hung upstream does.
    using _held = await listener.accept();
    const watch = new ConnectionWatch();
    let gone = 0;
    const { promise, resolve } = Promise.withResolvers<void>();
    const stop = watch.watch(
      port,
      (client.localAddr as Deno.NetAddr).port,
      () => {
        gone++;
        resolve();
      },
    );
    try {
      await new Promise((done) => setTimeout(done, 300));
      assert.equal(gone, 0, "an open connection is not reported");
      client.close();
      const started = performance.now();
      await promise;
      assert.ok(performance.now() - started < 1_000);
      assert.equal(gone, 1);
    } finally {
      stop();
    }
  },
});
