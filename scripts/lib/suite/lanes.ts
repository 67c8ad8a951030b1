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
 * GATEWAY_AGNOSTIC), so its shards are shorter: they fill the slots beside the node-sim shards (LANES).
 */
export const NODE_SHARDS = { sim: 3, stripe: 3 } as const;
/** The browser specs, likewise (a stack and a Chromium each); e2e/dashboard.spec.ts alone fills the first. */
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
 * Five at once (runSuite.ts), in this order, so that the slots end together. Beside two CPU hogs (clean-clone runs,
 * 2026-12-06) the node-sim shards took about 8.3 min, the Stripe and browser shards cut in three 4.1-5.1, the fault
 * runs 2.4-2.9 and the cluster 2.2. Cut in two, the Stripe and browser shards (6.7) had left two slots two long
 * lanes deep (13.3 min) while the others idled; now the slots beside the node-sim shards take the longest of the
 * rest, so that what starts when those end is short (about 12.7). Smaller shards six at once were slower (CPU 18m24s
 * against 16m12s): together the lanes fill both cores, so more at once only stretched each.
 */
export const LANES: readonly Lane[] = [
  // The node:test integration files through the simulator's own protocol, then through the Stripe adapter (all but
  // GATEWAY_AGNOSTIC in scripts/test.ts); Playwright, against stacks of their own.
  ...nodeLanes("sim"),
  ...nodeLanes("stripe"),
  ...e2eLanes,
  { name: "faults-stripe", args: faultRun, gateway: "stripe" },
  { name: "faults-sim", args: faultRun, gateway: "sim" },
  // Three Galera nodes and two app instances (test/cluster).
  { name: "cluster", args: [...SERVER_CODE_FLAGS, "scripts/testCluster.ts", "--no-build"], gateway: "sim" },
];
