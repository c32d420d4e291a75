// Reads a V8 .cpuprofile (node --cpu-prof) and prints where the time went: self time by area
// (our directories, each npm package, Node internals, GC, idle) and the functions with the most
// self time. Standalone: `npx tsx bench/profile-summary.ts FILE.cpuprofile`.
import { readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BUILD_DIR } from "./build.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** A script URL as a path relative to the first root holding it ("services/edge/edge.js"). */
function pathOf(url: string, roots: string[]): string {
  if (!url.startsWith("file://")) return url;
  const absolute = fileURLToPath(url);
  for (const root of roots) {
    const rel = relative(root, absolute);
    if (!rel.startsWith("..")) return rel;
  }
  return absolute;
}

/** Where a frame's code lives: "services/edge", "node_modules/pg", "node:internal", "(garbage collector)". */
function areaOf(url: string, functionName: string, roots: string[]): string {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  if (url.startsWith("node:")) return "node:internal";
  const path = pathOf(url, roots);
  const nm = path.lastIndexOf("node_modules/");
  if (nm !== -1) {
    const rest = path.slice(nm + "node_modules/".length).split("/");
    return `node_modules/${rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const parts = path.split("/");
  return parts.length > 2 ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** A period of the profile in ms since it started (about when the process started). */
export interface ProfileWindow {
  fromMs: number;
  toMs: number;
}

/** `roots`: directories the service's code was loaded from (its build directory first, then the repository). */
export async function summarizeProfile(
  file: string,
  roots: string[],
  top = 30,
  windows?: ProfileWindow[],
): Promise<string> {
  const profile = JSON.parse(await readFile(file, "utf8")) as CpuProfile;
  // Self time per node from the sample stream (exact), else hitCount × the mean interval.
  const selfUs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    let t = 0;
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      const ms = t / 1000;
      if (windows && !windows.some((w) => ms >= w.fromMs && ms < w.toMs)) continue;
      const dt = profile.timeDeltas[i + 1] ?? 0;
      selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + dt);
    }
  } else {
    const hits = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
    const interval = hits ? (profile.endTime - profile.startTime) / hits : 0;
    for (const n of profile.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const keyOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${pathOf(url, roots)}:${lineNumber + 1}` : "";
    return `${functionName || "(anonymous)"} ${where}`.trim();
  };
  // Total time: a function's self time and its callees', counted once however deep it recurs.
  // A stack starts again after each await, so a total is the synchronous work under a call.
  const totalByFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url } = node.callFrame;
    const area = areaOf(url, functionName, roots);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const key = keyOf(node);
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    if (area === "(idle)") continue;
    const counted = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      const caller = keyOf(nodes.get(id)!);
      if (counted.has(caller) || caller.startsWith("(root)")) continue;
      counted.add(caller);
      totalByFunction.set(caller, (totalByFunction.get(caller) ?? 0) + us);
    }
  }
  const busy = total - (byArea.get("(idle)") ?? 0);
  const line = (name: string, us: number) =>
    `  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`;
  const sorted = (m: Map<string, number>) =>
    [...m.entries()].filter(([k]) => k !== "(idle)").sort((a, b) => b[1] - a[1]);
  return [
    `busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms sampled (percentages of busy time)`,
    "self time by area:",
    ...sorted(byArea)
      .slice(0, 25)
      .map(([k, v]) => line(k, v)),
    `top ${top} functions by self time:`,
    ...sorted(byFunction)
      .slice(0, top)
      .map(([k, v]) => line(k, v)),
    `top ${top} of our functions by total time (self and callees within one synchronous stack):`,
    ...sorted(totalByFunction)
      .filter(([k]) => !k.includes("node_modules/") && /\.js:\d+$/.test(k) && !k.includes("node:"))
      .slice(0, top)
      .map(([k, v]) => line(k, v)),
  ].join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write("usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [TOP]\n");
    process.exit(2);
  }
  summarizeProfile(file, [join(process.cwd(), BUILD_DIR), process.cwd()], Number(process.argv[3] ?? 30)).then((s) =>
    process.stdout.write(`${s}\n`),
  );
}
