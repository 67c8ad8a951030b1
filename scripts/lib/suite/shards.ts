/**
 * The node:test files of a lane cut into shards, each run on a stack of its own (its own TEST_SLOT), so that the
 * node lanes, which spend most of their wall time waiting (leases, gateway timeouts, windows), wait side by side.
 * Balanced by measured seconds (fileSeconds.ts): the longest file first, each to the shard with the least so far.
 * Pure, so that the rule is unit-tested: every file in exactly one shard, the same cut on every machine.
 */
import { FILE_SECONDS, UNMEASURED_FILE_SECONDS } from "./fileSeconds";

export type Shard = { index: number; count: number };

/** `--shard=2/3`: the second of three (1-based, as node:test's and Playwright's --shard). */
export function parseShard(arg: string): Shard {
  const match = /^--shard=(\d+)\/(\d+)$/.exec(arg);
  const [index, count] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (!match || count < 1 || index < 1 || index > count)
    throw new Error(`${arg}: a shard is --shard=<i>/<n>, 1 <= i <= n (e.g. --shard=1/2)`);
  return { index, count };
}

/** The measured seconds of a test file through a gateway (a file not measured yet counts as a middling one). */
export function secondsOf(file: string, gateway: "sim" | "stripe"): number {
  const measured = FILE_SECONDS[file];
  return measured ? measured[gateway === "sim" ? 0 : 1] : UNMEASURED_FILE_SECONDS;
}

/** The files of shard `index` of `count`, in their given order. */
export function filesOfShard(
  files: readonly string[],
  { index, count }: Shard,
  weight: (file: string) => number,
): string[] {
  const load = new Array<number>(count).fill(0);
  const shardOf = new Map<string, number>();
  // Heaviest first, ties by name: the same cut wherever it runs.
  const byWeight = [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b));
  for (const file of byWeight) {
    const lightest = load.indexOf(Math.min(...load));
    shardOf.set(file, lightest);
    load[lightest]! += weight(file);
  }
  return files.filter((f) => shardOf.get(f) === index - 1);
}
