/**
 * `npm run test:cluster [-- --no-build]`: the idempotency protocol on a real
 * multi-primary cluster (test/cluster/): a private three-node MariaDB Galera
 * cluster on this TEST_SLOT's ports, two app instances on two nodes, started,
 * tested and stopped by the test itself. Needs Debian's galera-4 (and rsync);
 * fails loudly, naming the package, when it is missing.
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import path from "node:path";
import { bundleForRun } from "./lib/bundles";
import { loadDotEnv, root } from "./lib/config";
import { galeraMissing } from "./lib/galera";
import { BUNDLE_FLAGS, run } from "./lib/processes";

loadDotEnv();
const missing = galeraMissing();
if (missing) {
  console.error(`test:cluster cannot run: ${missing}`);
  process.exit(1);
}
if (!process.argv.includes("--no-build")) {
  // The build evaluates the server's environment; its secret is not kept (each instance gets its own).
  await run("next", ["build"], {
    NODE_ENV: "production",
    SESSION_SECRET: process.env.SESSION_SECRET ?? randomBytes(32).toString("hex"),
    TOTP_ENCRYPTION_KEY: process.env.TOTP_ENCRYPTION_KEY ?? randomBytes(32).toString("hex"),
  });
}

const started = Date.now();
const files = readdirSync(path.join(root, "test/cluster"))
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => `test/cluster/${f}`);
try {
  const bundles = await bundleForRun(files);
  const flags = [...BUNDLE_FLAGS, "--test", "--test-concurrency=1", "--test-reporter=spec"];
  await run(process.execPath, [...flags, ...bundles]);
  console.log(`\ncluster test passed in ${Math.round((Date.now() - started) / 1000)} s`);
} catch (error) {
  console.error(
    `\ncluster test FAILED after ${Math.round((Date.now() - started) / 1000)} s: ${(error as Error).message}`,
  );
  process.exit(1);
}
