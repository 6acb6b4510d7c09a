/**
 * `npx tsx scripts/cpuprofile-top.ts <file.cpuprofile | dir>…`: where a V8 CPU profile's time went. Prints the
 * time sampled and how much of it was busy, then self time by package or project folder, then the top functions by
 * self time and by inclusive time (each function counted once per sample, however deep its recursion), as shares
 * of the busy time. A directory stands for the main-thread profiles in it. Profiles come from
 * `BENCH_CPU_PROF_DIR=<dir> npm run bench …` (node --cpu-prof, one directory per process); docs/benchmarks.md
 * shows the one-liner.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** node_modules/<pkg>, the project folder (server/unread), node: internals, or the runtime's own entries. */
export function owner(url: string, functionName: string): string {
  if (!url) return `(${functionName || "anonymous"})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith("node:")) return "node:" + url.slice(5).split("/")[0];
  const own = /\/(server|components|app|scripts|prisma)\/([^/]+)\//.exec(url);
  return own ? `${own[1]}/${own[2]}` : url.split("/").slice(-2).join("/");
}

/**
 * The profiles of main threads among `names`: node --cpu-prof names each CPU.<date>.<time>.<pid>.<thread>.<seq>
 * .cpuprofile, thread 0 being the main one (others are workers, such as tsx's module loader). Names of another
 * form are kept.
 */
export function mainThreadProfiles(names: string[]): string[] {
  return names.filter((name) => {
    if (!name.endsWith(".cpuprofile")) return false;
    const thread = /^CPU\.\d+\.\d+\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(name)?.[1];
    return thread === undefined || thread === "0";
  });
}

/** The report for `profiles` taken together; V8's "(idle)" counts as sampled, not busy. */
export function summarize(profiles: Profile[]): string {
  const self = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const name = (n: ProfileNode) => {
      const { functionName, url, lineNumber } = n.callFrame;
      const where = url
        ? `${url.replace(/^.*?\/(node_modules|server|components|scripts)\//, "$1/")}:${lineNumber + 1}`
        : "";
      return `${functionName || "(anonymous)"} ${where}`.trim();
    };
    profile.samples.forEach((id, i) => {
      const us = profile.timeDeltas[i] ?? 0;
      const node = byId.get(id)!;
      total += us;
      if (!node.callFrame.url && node.callFrame.functionName === "(idle)") {
        idle += us;
        return;
      }
      const key = name(node);
      self.set(key, (self.get(key) ?? 0) + us);
      const o = owner(node.callFrame.url, node.callFrame.functionName);
      byOwner.set(o, (byOwner.get(o) ?? 0) + us);
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const k = name(byId.get(at)!);
        if (seen.has(k)) continue;
        seen.add(k);
        inclusive.set(k, (inclusive.get(k) ?? 0) + us);
      }
    });
  }
  const busy = total - idle;
  const pct = (us: number) => `${((100 * us) / (busy || 1)).toFixed(1).padStart(5)}%`;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  return [
    `${profiles.length} profile(s), ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy (shares below are of the busy time)`,
    "self time by owner:",
    ...top(byOwner, 15),
    "self time by function:",
    ...top(self, 25),
    "inclusive time by function:",
    ...top(inclusive, 40),
  ].join("\n");
}

/** The files named, and the main-thread profiles in the directories named. */
function profileFiles(args: string[]): string[] {
  return args.flatMap((arg) =>
    statSync(arg).isDirectory() ? mainThreadProfiles(readdirSync(arg).sort()).map((name) => join(arg, name)) : [arg],
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const files = profileFiles(args);
  if (files.length === 0) {
    console.error(
      args.length === 0
        ? "usage: npx tsx scripts/cpuprofile-top.ts <file.cpuprofile | dir>…"
        : `no main-thread .cpuprofile in ${args.join(" ")}`,
    );
    process.exit(2);
  }
  console.log(summarize(files.map((file) => JSON.parse(readFileSync(file, "utf8")) as Profile)));
}
