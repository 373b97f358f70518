/**
 * A V8 CPU profile (as `deno run --cpu-prof` writes it) summarised as self
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
  /** The caller most of those samples came through (`name (where)`). */
  calledFrom: string;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** The part of a V8 `Profiler.stop` result this module reads. */
export interface CpuProfile {
  /** Call-tree nodes. */
  nodes: ProfileNode[];
  /** The node id of each sample. */
  samples: number[];
}

function shortUrl(url: string): string {
  const nodeModules = url.lastIndexOf("node_modules/");
  if (nodeModules !== -1) return url.slice(nodeModules + 13);
  const repo = url.indexOf("/work/main/");
  if (repo !== -1) return url.slice(repo + 11);
  return url.replace(/^.*\/(deno|ext):?/, "$1:");
}

/** The profile's nodes by id, and each node's parent. */
function callTree(profile: CpuProfile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  return { byId, parentOf };
}

/**
 * Summarises a profile as self time per function, largest first.
 *
 * @param profile A V8 `Profiler.stop` result.
 * @param top How many functions to keep.
 * @returns The hot spots.
 */
export function hotSpots(profile: CpuProfile, top: number): HotSpot[] {
  const { byId, parentOf } = callTree(profile);
  const describe = (id: number | undefined) => {
    const frame = id === undefined ? undefined : byId.get(id)?.callFrame;
    if (!frame) return { name: "(root)", where: "" };
    return {
      name: frame.functionName || "(anonymous)",
      where: frame.url === ""
        ? ""
        : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`,
    };
  };
  const counts = new Map<
    string,
    {
      name: string;
      where: string;
      samples: number;
      parents: Map<string, number>;
    }
  >();
  for (const id of profile.samples) {
    const { name, where } = describe(id);
    const key = `${name}@${where}`;
    const entry = counts.get(key) ??
      { name, where, samples: 0, parents: new Map<string, number>() };
    entry.samples += 1;
    const parent = describe(parentOf.get(id));
    const parentKey = parent.where
      ? `${parent.name} (${parent.where})`
      : parent.name;
    entry.parents.set(parentKey, (entry.parents.get(parentKey) ?? 0) + 1);
    counts.set(key, entry);
  }
  const total = profile.samples.length;
  return [...counts.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map(({ name, where, samples, parents }) => ({
      name,
      where,
      selfPercent: (100 * samples) / total,
      calledFrom: [...parents.entries()].sort((a, b) => b[1] - a[1])[0][0],
    }));
}

/** One of our functions' share of the busy (not idle) samples. */
export interface OwnHotSpot {
  /** Function name. */
  name: string;
  /** Path relative to the repository, and line. */
  where: string;
  /** Percentage of busy samples spent in the function itself. */
  selfPercent: number;
  /** Percentage of busy samples with the function on the stack (what it and its callees cost, synchronously). */
  totalPercent: number;
}

/**
 * Our own code's functions (files under `gateway/`) by time on the stack: a
 * profile at saturation is mostly Deno's and V8's, and this says which of
 * our steps the rest of the time is spent under.
 *
 * @param profile A V8 `Profiler.stop` result.
 * @param top How many functions to keep.
 * @returns Our functions, most time on the stack first.
 */
export function ownHotSpots(profile: CpuProfile, top: number): OwnHotSpot[] {
  const { byId, parentOf } = callTree(profile);
  const ours = (id: number) => {
    const frame = byId.get(id)!.callFrame;
    const where = shortUrl(frame.url);
    return where.startsWith("gateway/")
      ? `${frame.functionName || "(anonymous)"}@${where}:${
        frame.lineNumber + 1
      }`
      : undefined;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    if (byId.get(id)!.callFrame.functionName === "(idle)") continue;
    busy++;
    const leaf = ours(id);
    if (leaf) self.set(leaf, (self.get(leaf) ?? 0) + 1);
    const seen = new Set<string>();
    for (
      let at: number | undefined = id;
      at !== undefined;
      at = parentOf.get(at)
    ) {
      const key = ours(at);
      if (key && !seen.has(key)) {
        seen.add(key);
        total.set(key, (total.get(key) ?? 0) + 1);
      }
    }
  }
  return [...total.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, samples]) => {
      const at = key.indexOf("@");
      return {
        name: key.slice(0, at),
        where: key.slice(at + 1),
        selfPercent: (100 * (self.get(key) ?? 0)) / busy,
        totalPercent: (100 * samples) / busy,
      };
    });
}
