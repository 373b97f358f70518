/**
 * A V8 CPU profile of a process started with `--inspect=127.0.0.1:0`, taken
 * over the Chrome DevTools Protocol while load runs, and summarised as self
 * time per function.
 *
 * @module
 */

/** One function's share of the sampled time. */
export interface HotSpot {
  /** Function name (or `(anonymous)`, `(garbage collector)`, `(program)`, `(idle)`). */
  name: string;
  /** Where it is defined: path relative to the repository or package, and line. */
  where: string;
  /** Percentage of all samples spent in the function itself. */
  selfPercent: number;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
}

function shortUrl(url: string): string {
  const nodeModules = url.lastIndexOf("node_modules/");
  if (nodeModules !== -1) return url.slice(nodeModules + 13);
  const repo = url.indexOf("/work/main/");
  if (repo !== -1) return url.slice(repo + 11);
  return url.replace(/^.*\/(deno|ext):?/, "$1:");
}

/**
 * Summarises a profile as self time per function, largest first.
 *
 * @param profile A V8 `Profiler.stop` result.
 * @param top How many functions to keep.
 * @returns The hot spots.
 */
export function hotSpots(profile: CpuProfile, top: number): HotSpot[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const counts = new Map<string, HotSpot & { samples: number }>();
  for (const id of profile.samples) {
    const frame = byId.get(id)!.callFrame;
    const name = frame.functionName || "(anonymous)";
    const where = frame.url === ""
      ? ""
      : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    const key = `${name}@${where}`;
    const entry = counts.get(key) ??
      { name, where, selfPercent: 0, samples: 0 };
    entry.samples += 1;
    counts.set(key, entry);
  }
  const total = profile.samples.length;
  return [...counts.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map(({ name, where, samples }) => ({
      name,
      where,
      selfPercent: (100 * samples) / total,
    }));
}

/**
 * Connects to an inspector, profiles while `load` runs, and returns the
 * profile.
 *
 * @param inspectorUrl The `ws://` URL the process printed.
 * @param load The load to profile.
 * @returns The raw profile.
 */
export async function profileDuring(
  inspectorUrl: string,
  load: () => Promise<void>,
): Promise<CpuProfile> {
  const socket = new WebSocket(inspectorUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let nextId = 1;
  const pending = new Map<number, (result: unknown) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data as string) as {
      id?: number;
      result?: unknown;
    };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  };
  const send = (method: string, params: Record<string, unknown> = {}) => {
    const id = nextId++;
    const { promise, resolve } = Promise.withResolvers<unknown>();
    pending.set(id, resolve);
    socket.send(JSON.stringify({ id, method, params }));
    return promise;
  };
  try {
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: 200 });
    await send("Profiler.start");
    await load();
    const result = await send("Profiler.stop") as { profile: CpuProfile };
    return result.profile;
  } finally {
    const closed = new Promise((resolve) => socket.onclose = resolve);
    socket.close();
    await closed;
  }
}
