// The console's provider keys tab: each key's state and its use of the last
// minute against its limits.
import { h, table } from "./dom.js";
import { count, time } from "./format.js";
import { get } from "./console_shell.js";

/** The provider keys and their state. */
export async function keysTab() {
  const health = await get("/admin/provider-keys");
  const rows = health.data ?? health;
  return [
    h("p", {
      class: "muted",
      text:
        "Each provider key by its id: what it is doing now and its use of the last minute against its limits.",
    }),
    table(
      [
        { label: "Provider", value: (k) => k.provider },
        { label: "Key id", value: (k) => k.keyId },
        { label: "State", value: (k) => stateOf(k) },
        { label: "In flight", num: true, value: (k) => count(k.inFlight) },
        {
          label: "RPM",
          num: true,
          value: (k) =>
            `${count(k.requestsLastMinute)}${
              k.rpm ? ` / ${count(k.rpm)}` : ""
            }`,
        },
        {
          label: "TPM",
          num: true,
          value: (k) =>
            `${count(k.tokensLastMinute)}${k.tpm ? ` / ${count(k.tpm)}` : ""}`,
        },
      ],
      rows,
      { testid: "keys-table", empty: "No provider keys configured." },
    ),
  ];
}

function stateOf(key) {
  if (key.state === "healthy") return key.inFlight > 0 ? "in use" : "ready";
  const until = key.coolUntil
    ? ` until ${time(Date.parse(key.coolUntil))}`
    : "";
  if (key.state === "cooling") return `cooling down${until}`;
  if (key.state === "refused") {
    return `refused by the provider (revoked?)${until}`;
  }
  return "probing";
}
