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

const testRun = (filter: string) => [...SERVER_CODE_FLAGS, "scripts/test.ts", "--no-build", filter];
const faultRun = [...SERVER_CODE_FLAGS, "scripts/faults.ts", "--duration", FAULT_RUN_SECONDS, "--no-build"];

export const LANES: readonly Lane[] = [
  // The node:test integration files, through the simulator's own protocol, then through the Stripe adapter
  // (all but what never reaches the gateway: scripts/test.ts GATEWAY_AGNOSTIC).
  { name: "node-sim", args: testRun("node"), gateway: "sim" },
  { name: "node-stripe", args: testRun("node"), gateway: "stripe" },
  // Playwright, against a stack of its own.
  { name: "e2e", args: testRun("e2e"), gateway: "sim" },
  // Three Galera nodes and two app instances (test/cluster).
  { name: "cluster", args: [...SERVER_CODE_FLAGS, "scripts/testCluster.ts", "--no-build"], gateway: "sim" },
  { name: "faults-sim", args: faultRun, gateway: "sim" },
  { name: "faults-stripe", args: faultRun, gateway: "stripe" },
];
