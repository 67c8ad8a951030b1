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
 * Six at once (runSuite.ts), in this order: the node-sim shards and the Stripe shards first, the browser shards in
 * the Stripe shards' slots, the fault runs and the cluster (the shortest) after the node-sim shards. Clean-clone runs
 * beside two CPU hogs, 2026-12-07: five at once 17m33s (the slots ended at 14m18s, the node-sim shards 8.5 min, a
 * Stripe shard then a browser one about 11), six at once 15m18s (12m28s; the node-sim shards 9.1-10.0, the rest
 * 2.5-6.7): the lanes wait more than they compute, so a sixth overlaps waits rather than stretching the others.
 * Seven at once, the same day, 18m23s: the node-sim shards 12-14 min, the suite's CPU 19m47s against 15m31s for six.
 * (Smaller shards six at once, 2026-12-05, were slower: more stacks to boot.)
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
