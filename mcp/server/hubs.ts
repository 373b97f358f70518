/**
 * The hubs mounted on one server, each behind one dispatcher tool. The
 * harness's hubs (`setup` and `evaluate` unless the options say otherwise)
 * answer only the harness when a harness token is set, and a run's tool
 * filters apply to every other hub: they set up and score the run, and a
 * scenario's filters are the agent's, not theirs.
 *
 * @module
 */
import type { McpServer } from "../_sdk.ts";
import { harnessAllowed } from "../harness.ts";
import { type BaseHub, registerHub } from "../primitives/hub.ts";
import type { ToolExtra } from "../primitives/tool.ts";

/** The hubs mounted on one server, by name. */
export class MountedHubs {
  readonly #server: McpServer;
  readonly #harnessToken: string | undefined;
  readonly #harnessHubs: ReadonlySet<string>;
  readonly #refusal: (name: string, extra: ToolExtra) => string | undefined;
  readonly #hubs = new Map<string, BaseHub>();

  /**
   * Creates an empty set.
   *
   * @param server The server the hubs are mounted on.
   * @param harnessToken The harness token; unset: every hub answers everyone.
   * @param harnessHubs The names of the harness's hubs.
   * @param refusal Why a call may not run (a run's tool filters), for the other hubs.
   */
  constructor(
    server: McpServer,
    harnessToken: string | undefined,
    harnessHubs: ReadonlySet<string>,
    refusal: (name: string, extra: ToolExtra) => string | undefined,
  ) {
    this.#server = server;
    this.#harnessToken = harnessToken;
    this.#harnessHubs = harnessHubs;
    this.#refusal = refusal;
  }

  /** The mounted hubs, in mount order. */
  get all(): readonly BaseHub[] {
    return [...this.#hubs.values()];
  }

  /**
   * Registers the hub's dispatcher tool and function list.
   *
   * @param hub The hub.
   * @throws {Error} When a hub of that name is mounted already.
   */
  mount(hub: BaseHub): void {
    if (this.#hubs.has(hub.name)) {
      throw new Error(`Hub "${hub.name}" is already mounted`);
    }
    const token = this.#harnessToken;
    const harnessOnly = this.#harnessHubs.has(hub.name);
    registerHub(
      this.#server,
      hub,
      harnessOnly ? (extra) => harnessAllowed(token, extra) : undefined,
      harnessOnly ? undefined : this.#refusal,
    );
    this.#hubs.set(hub.name, hub);
  }
}
