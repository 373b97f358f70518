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

/**
 * Summarises a profile as self time per function, largest first.
 *
 * @param profile A V8 `Profiler.stop` result.
 * @param top How many functions to keep.
 * @returns The hot spots.
 */
export function hotSpots(profile: CpuProfile, top: number): HotSpot[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
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
