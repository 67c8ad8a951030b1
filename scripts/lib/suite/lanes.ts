/**
 * The integration work of `npm test`, cut into lanes that share nothing but the build and the MariaDB server:
 * each runs in a TEST_SLOT of its own (ports, databases, private servers), so they can run side by side.
 */
import { SERVER_CODE_FLAGS } from "../processes";

/** The short fault run, once per gateway (`npm run test:faults -- --duration 900` runs long). */
export const FAULT_RUN_SECONDS = "100";

export type Lane = {
  name: string;
  /** A script run with tsx, and its arguments. */
  args: string[];
  gateway: "sim" | "stripe";
};

/**
 * How many shards each gateway's node:test files are cut into (shards.ts): the files wait far more than they
 * compute, so shards on stacks of their own overlap their waits. The Stripe pass runs fewer files (scripts/test.ts
 * GATEWAY_AGNOSTIC), so fewer shards.
 */
export const NODE_SHARDS = { sim: 4, stripe: 3 } as const;
/** The browser specs, likewise (a stack and a Chromium each); e2e/dashboard.spec.ts alone fills one. */
export const E2E_SHARDS = 3;

const testRun = (...args: string[]) => [...SERVER_CODE_FLAGS, "scripts/test.ts", "--no-build", ...args];
const faultRun = [...SERVER_CODE_FLAGS, "scripts/faults.ts", "--duration", FAULT_RUN_SECONDS, "--no-build"];

/** The node:test integration files through one gateway, in its NODE_SHARDS lanes. */
const nodeLanes = (gateway: Lane["gateway"]): Lane[] =>
  Array.from({ length: NODE_SHARDS[gateway] }, (_, i) => ({
    name: `node-${gateway}-${i + 1}`,
    args: testRun("node", `--shard=${i + 1}/${NODE_SHARDS[gateway]}`),
    gateway,
  }));

const e2eLanes: Lane[] = Array.from({ length: E2E_SHARDS }, (_, i) => ({
  name: `e2e-${i + 1}`,
  args: testRun("e2e", `--shard=${i + 1}/${E2E_SHARDS}`),
  gateway: "sim" as const,
}));

/**
 * Longest first, so that the short lanes fill the slots that free up last. Beside two CPU hogs (a clean-clone run,
 * 2026-12-06, with 3 simulator, 2 Stripe and 2 browser shards, five at once) the node lanes were almost all waiting
 * (2 min of CPU in 7-8.5 min) and the browser lanes 1.7 in 6.3, so they are cut smaller and run six at once
 * (runSuite.ts): seven long lanes on five slots had made every run two long lanes deep.
 */
export const LANES: readonly Lane[] = [
  // The node:test integration files, through the simulator's own protocol, then through the Stripe adapter
  // (all but GATEWAY_AGNOSTIC in scripts/test.ts). Playwright, against stacks of their own; its first shard is
  // e2e/dashboard.spec.ts alone, as long as a simulator shard.
  ...nodeLanes("sim"),
  e2eLanes[0]!,
  ...nodeLanes("stripe"),
  ...e2eLanes.slice(1),
  { name: "faults-stripe", args: faultRun, gateway: "stripe" },
  { name: "faults-sim", args: faultRun, gateway: "sim" },
  // Three Galera nodes and two app instances (test/cluster).
  { name: "cluster", args: [...SERVER_CODE_FLAGS, "scripts/testCluster.ts", "--no-build"], gateway: "sim" },
];
