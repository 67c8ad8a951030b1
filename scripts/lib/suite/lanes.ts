/**
 * The integration work of `npm test`, cut into lanes that share nothing but the build and the MariaDB server:
 * each runs in a TEST_SLOT of its own (ports, databases, private servers), so they can run side by side.
 * Listed longest first, so that the lanes started last are short ones and the slots end together (2026-12-05,
 * 2 cores shared at load 27: node 18-24 min, e2e 8, the cluster and each fault run about 3).
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
 * compute, so shards on stacks of their own overlap their waits.
 */
export const NODE_SHARDS = 2;
/** The browser specs, likewise (a stack and a Chromium each). */
export const E2E_SHARDS = 2;

const testRun = (...args: string[]) => [...SERVER_CODE_FLAGS, "scripts/test.ts", "--no-build", ...args];
const faultRun = [...SERVER_CODE_FLAGS, "scripts/faults.ts", "--duration", FAULT_RUN_SECONDS, "--no-build"];

/** The node:test integration files through one gateway, in NODE_SHARDS lanes (all but GATEWAY_AGNOSTIC for stripe). */
const nodeLanes = (gateway: Lane["gateway"]): Lane[] =>
  Array.from({ length: NODE_SHARDS }, (_, i) => ({
    name: `node-${gateway}-${i + 1}`,
    args: testRun("node", `--shard=${i + 1}/${NODE_SHARDS}`),
    gateway,
  }));

export const LANES: readonly Lane[] = [
  // The node:test integration files, through the simulator's own protocol, then through the Stripe adapter
  // (all but what never reaches the gateway: scripts/test.ts GATEWAY_AGNOSTIC).
  ...nodeLanes("sim"),
  ...nodeLanes("stripe"),
  // Playwright, against stacks of their own, the specs cut like the node:test files.
  ...Array.from({ length: E2E_SHARDS }, (_, i) => ({
    name: `e2e-${i + 1}`,
    args: testRun("e2e", `--shard=${i + 1}/${E2E_SHARDS}`),
    gateway: "sim" as const,
  })),
  // Three Galera nodes and two app instances (test/cluster).
  { name: "cluster", args: [...SERVER_CODE_FLAGS, "scripts/testCluster.ts", "--no-build"], gateway: "sim" },
  { name: "faults-sim", args: faultRun, gateway: "sim" },
  { name: "faults-stripe", args: faultRun, gateway: "stripe" },
];
