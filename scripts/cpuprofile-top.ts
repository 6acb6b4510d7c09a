/**
 * `npx tsx scripts/cpuprofile-top.ts <file.cpuprofile>…`: where a V8 CPU profile's time went. Prints the total,
 * then self time by package or project folder, then the top functions by self time and by inclusive time
 * (each function counted once per sample, however deep its recursion). Profiles come from
 * `BENCH_CPU_PROF_DIR=<dir> npm run bench …` (node --cpu-prof on each instance); docs/benchmarks.md quotes them.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
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

function summarize(files: string[]): string {
  const self = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
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
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  return [
    `${files.length} profile(s), ${(total / 1000).toFixed(0)} ms sampled`,
    "self time by owner:",
    ...top(byOwner, 15),
    "self time by function:",
    ...top(self, 25),
    "inclusive time by function:",
    ...top(inclusive, 40),
  ].join("\n");
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: npx tsx scripts/cpuprofile-top.ts <file.cpuprofile>…");
  process.exit(2);
}
console.log(summarize(files));
