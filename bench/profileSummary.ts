/**
 * Where a CPU profile written by bench/profile.cjs spent its samples, by who owns the code: the framework
 * (Next.js, React), Node.js itself (HTTP, sockets, streams, timers, async hooks), the database driver, the app's
 * own bundle, garbage collection. Self time only, so each sample is counted once.
 */
import { readFileSync } from "node:fs";

type ProfileNode = { id: number; hitCount?: number; callFrame: { functionName: string; url: string } };
type Profile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] };

const OWNERS: [string, (f: ProfileNode["callFrame"]) => boolean][] = [
  ["idle", (f) => f.functionName === "(idle)"],
  ["garbage collection", (f) => f.functionName === "(garbage collector)"],
  ["V8 and native code (program)", (f) => f.functionName === "(program)" || f.functionName === "(root)"],
  ["Node.js (http, net, streams, timers, async hooks)", (f) => f.url.startsWith("node:") || f.url === ""],
  ["Next.js runtime", (f) => f.url.includes("/node_modules/next/")],
  ["React", (f) => /\/node_modules\/react(-dom|-server-dom[^/]*)?\//.test(f.url)],
  ["mariadb driver", (f) => f.url.includes("/node_modules/mariadb/")],
  ["other node_modules", (f) => f.url.includes("/node_modules/")],
  ["the app's bundle (.next/server: our code and what Next.js bundled with it)", (f) => f.url.includes("/.next/")],
  ["other", () => true],
];

export type ProfileShare = { owner: string; ms: number; percent: number };

/** Milliseconds of self time per owner over the profile's span, busiest first; idle last. */
export function summariseProfile(path: string): { spanMs: number; busyMs: number; shares: ProfileShare[] } {
  const profile = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const spanMs = (profile.endTime - profile.startTime) / 1000;
  const samples = profile.samples.length;
  const msPerSample = samples ? spanMs / samples : 0;
  const byOwner = new Map<string, number>();
  for (const node of profile.nodes) {
    const owner = OWNERS.find(([, matches]) => matches(node.callFrame))![0];
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + (node.hitCount ?? 0) * msPerSample);
  }
  const shares = [...byOwner]
    .map(([owner, ms]) => ({ owner, ms, percent: (100 * ms) / spanMs }))
    .sort((a, b) => (a.owner === "idle" ? 1 : b.owner === "idle" ? -1 : b.ms - a.ms));
  const busyMs = shares.filter((s) => s.owner !== "idle").reduce((n, s) => n + s.ms, 0);
  return { spanMs, busyMs, shares };
}
