/**
 * `npm test`: every test (scripts/lib/suite/runSuite.ts): typecheck, lint and the unit tier, one production
 * build, then the integration work in lanes side by side, each in a TEST_SLOT of its own (TEST_LANE_SLOTS,
 * TEST_LANES at once): the node:test files through each gateway, a 100 s fault run through each gateway, the
 * Galera cluster test and the browser tests. Logs in .data/test-lanes/, one summary line at the end.
 *
 * With arguments, one stack in this TEST_SLOT (its databases charges_test, charges_test_gateway dropped and
 * re-created; the build made unless --no-build; the simulated gateway and the app started), the chosen tests,
 * and a reconciliation of the run's ledger at the end:
 *   npm test -- test/sweep   only the node:test files whose path contains "test/sweep"
 *   npm test -- node         every node:test integration file (not the unit tier)
 *   npm test -- e2e          only the browser tests (e2e/x.spec.ts[:line]: one file, or one test)
 *   npm test -- faults       only the fault run
 *   npm test -- --no-build   the whole suite, reusing the last production build (while iterating on tests)
 *   GATEWAY=stripe npm test -- node   through the Stripe adapter: all but what never reaches the gateway
 *   npm test -- node --shard=1/2      half of the node:test files, balanced by their measured times (a suite lane)
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { provisionAppUser } from "./lib/appUser";
import { sweepUntilNothingInProgress } from "./lib/closingSweeps";
import { bundleForRun } from "./lib/bundles";
import { loadDotEnv, root, TEST_SEARCH_LAG_MS, testConfig } from "./lib/config";
import { createDatabase } from "./lib/mariadbServer";
import { prepareDatabase } from "./lib/prepareDatabase";
import {
  BUNDLE_FLAGS,
  bin,
  run,
  SERVER_CODE_FLAGS,
  startApp,
  startDispatcher,
  startGateway,
  type Service,
} from "./lib/processes";
import { FAULT_RUN_SECONDS } from "./lib/suite/lanes";
import { filesOfShard, parseShard, secondsOf } from "./lib/suite/shards";
import { warmUpDashboard } from "./lib/warmUp";

const FILE_TIMES_REPORTER = path.join(root, "scripts/lib/suite/fileTimesReporter.mjs");

loadDotEnv();
const config = testConfig();
const args = process.argv.slice(2);
const build = !args.includes("--no-build");
// --shard=i/n: this shard of the node:test files, or of the browser specs (the suite's lanes; lib/suite/shards.ts).
const shardArg = args.find((a) => a.startsWith("--shard"));
const shard = shardArg ? parseShard(shardArg) : undefined;
const filters = args.filter((a) => a !== "--no-build" && a !== shardArg);
if (filters.length === 0) {
  const { runSuite } = await import("./lib/suite/runSuite");
  process.exit(await runSuite({ build }));
}
/** `node`: every node:test integration file (one of the suite's lanes); another word: the files containing it. */
const allNodeTests = filters.includes("node");
const nodeFilters = filters.filter((f) => !f.startsWith("e2e") && f !== "faults" && f !== "node");
const runNodeTests = allNodeTests || nodeFilters.length > 0;
const runFaults = filters.includes("faults");
/**
 * Files whose verdict does not depend on what the gateway answers: staff and access, boot and HTTP edges, the
 * database's own mechanics, read models, webhooks and documents, packaging and CLIs, the wire protocol's headers,
 * validation and the rollout's counts (decided before any gateway call). They make charges through the simulator
 * like any other, so a GATEWAY=stripe pass leaves them to the default pass (the suite runs both) unless asked for
 * by name (`GATEWAY=stripe npm test -- test/trpc`).
 * What stays in both passes is every money path: outcomes, timeouts, crashes, sweeps, refunds, the ledger, retries.
 */
const GATEWAY_AGNOSTIC = [
  ...["login", "staffSessions", "twoFactor", "accessManagement", "auditAndPrivileges", "keyRevocation"],
  ...["apiKeys", "staffRefundControls", "clientAddress", "boot", "httpHardening", "httpEdges", "logging"],
  ...["metrics", "diagnostics"],
  ...["atomically", "countFold", "reading"],
  ...["dashboardQueries", "requestTimeline", "supportSearch", "trpc", "lists", "webhooks", "openapi", "docsSamples"],
  ...["sdkPackage", "cliDatabase", "protocol", "requestIds", "validation", "rollout", "rolloutSafety"],
].map((name) => `test/${name}.test.ts`);
const stripePass = process.env.GATEWAY === "stripe";
const runBrowserTests = filters.some((f) => f.startsWith("e2e"));

const testFiles = (dir: string) =>
  readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `${dir}/${f}`)
    .filter((f) => nodeFilters.length === 0 || nodeFilters.some((filter) => f.includes(filter)));

// Unit files named by a filter first: seconds, no services, and they fail fast.
const unitFiles = nodeFilters.length > 0 ? testFiles("test/unit") : [];
if (unitFiles.length > 0) await run(process.execPath, ["--import", "tsx", "--test", ...unitFiles]);

const privateDb = await prepareDatabase(config.databaseUrl, { fresh: true });
await createDatabase(config.gatewayDatabaseUrl, { dropFirst: true });
// The app runs as its own least-privilege user; the tests connect as the admin user to seed and inspect.
const appDatabaseUrl = await provisionAppUser(config.databaseUrl);
const appEnv = { ...config.env, DATABASE_URL: appDatabaseUrl };

// Known staff passwords and a demo API key for the browser tests.
Object.assign(process.env, config.env, {
  DEMO_SUPPORT_PASSWORD: "support-test-password",
  DEMO_ENGINEER_PASSWORD: "engineer-test-password",
});
const { seedDemo } = await import("./lib/seed");
const demo = await seedDemo();

if (build) await run("next", ["build"], { ...config.env, NODE_ENV: "production" });

const testEnv = {
  ...config.env,
  // The CLIs a test runs resolve the database as `npm start` does, admin URL first: this run's, not .env's.
  DATABASE_ADMIN_URL: config.databaseUrl,
  TEST_APP_URL: `http://127.0.0.1:${config.appPort}`,
  TEST_APP_PORT: String(config.appPort),
  TEST_GATEWAY_DATABASE_URL: config.gatewayDatabaseUrl,
  TEST_GATEWAY_PORT: String(config.gatewayPort),
  TEST_APP_DATABASE_URL: appDatabaseUrl,
  TEST_API_KEY: demo.apiKey,
  TEST_SUPPORT_EMAIL: "support@example.com",
  TEST_SUPPORT_PASSWORD: "support-test-password",
  TEST_ENGINEER_EMAIL: "engineer@example.com",
  TEST_ENGINEER_PASSWORD: "engineer-test-password",
};

const services: Service[] = [];
const failures: string[] = [];
const startedAt = new Date();

/**
 * The closing check of every run: sweeps finish what nobody retried, as soon as nothing can still land, then the
 * reconciliation compares the gateway with the app for the whole run and the invariants are checked.
 */
async function closingLedgerCheck(since: Date) {
  const { checkLedgerInvariants, describeReport } = await import("~/server/ledger/invariants");
  await sweepUntilNothingInProgress();
  const report = await checkLedgerInvariants({ since });
  return { ok: report.ok, summary: describeReport(report) };
}
const chosen = testFiles("test").filter((f) => nodeFilters.length > 0 || !stripePass || !GATEWAY_AGNOSTIC.includes(f));
const gatewayName = stripePass ? "stripe" : "sim";
const files = shard ? filesOfShard(chosen, shard, (f) => secondsOf(f, gatewayName)) : chosen;
// The chosen files, the workers and the simulated gateway run from bundles made now (lib/bundles.ts).
const testBundles = await bundleForRun(runNodeTests ? files : []);

try {
  const gatewayDatabase = { port: config.gatewayPort, databaseUrl: config.gatewayDatabaseUrl };
  services.push(await startGateway({ ...gatewayDatabase, searchLagMs: TEST_SEARCH_LAG_MS, quiet: true }));
  console.log(`gateway: ${config.env.GATEWAY} (simulated)`);
  services.push(await startApp({ port: config.appPort, env: appEnv, quiet: true }));
  // The webhook dispatcher, as npm start runs it: the tests' receivers get what it posts (test/webhooks*.test.ts).
  services.push(startDispatcher(appEnv, { quiet: true }));

  if (shard && runNodeTests) console.log(`shard ${shard.index}/${shard.count}: ${files.join(" ")}`);
  if (stripePass && nodeFilters.length === 0) {
    console.log(
      `GATEWAY=stripe: the default pass runs what does not depend on the gateway: ${GATEWAY_AGNOSTIC.join(", ")}, e2e`,
    );
  }
  // TEST_TIMES_FILE (the suite's node lanes set it): each file's wall time, beside the usual spec output.
  const timesFile = process.env.TEST_TIMES_FILE;
  const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout"];
  if (timesFile) reporters.push(`--test-reporter=${FILE_TIMES_REPORTER}`, `--test-reporter-destination=${timesFile}`);
  if (runNodeTests && files.length > 0) {
    // One file at a time: the fault tests kill and restart servers.
    const flags = [...BUNDLE_FLAGS, "--test", "--test-concurrency=1"];
    await run(process.execPath, [...flags, ...reporters, ...testBundles], testEnv).catch((e) =>
      failures.push(String(e)),
    );
  }
  if (runFaults) {
    // Its own stack (private MariaDB, gateway, two app instances, sweeper); prints the seed that replays it.
    await run(bin("tsx"), [
      ...SERVER_CODE_FLAGS,
      "scripts/faults.ts",
      "--duration",
      FAULT_RUN_SECONDS,
      "--no-build",
    ]).catch((e) => failures.push(String(e)));
  }
  if (runBrowserTests) {
    // `e2e/dashboard.spec.ts` or `e2e/dashboard.spec.ts:120` (a file, or the test at that line) go to Playwright.
    const named = filters.filter((f) => f.startsWith("e2e/"));
    const allSpecs = readdirSync(path.join(root, "e2e"))
      .filter((f) => f.endsWith(".spec.ts"))
      .map((f) => `e2e/${f}`);
    const specs = shard && named.length === 0 ? filesOfShard(allSpecs, shard, (f) => secondsOf(f, "sim")) : named;
    if (shard) console.log(`shard ${shard.index}/${shard.count}: ${specs.join(" ")}`);
    await warmUpDashboard(testEnv.TEST_APP_URL, {
      email: testEnv.TEST_ENGINEER_EMAIL,
      password: testEnv.TEST_ENGINEER_PASSWORD,
    });
    await run("playwright", ["test", ...specs], testEnv).catch((e) => failures.push(String(e)));
  }
  // Whatever the tests did, the ledger must add up: finish what is left, then reconcile the whole run.
  const ledger = await closingLedgerCheck(startedAt);
  console.log(`\nledger after the run: ${ledger.summary}`);
  if (!ledger.ok) failures.push(`the ledger does not add up after the run:\n${ledger.summary}`);
} finally {
  for (const service of services.reverse()) await service.stop();
  await privateDb?.stop();
}

if (failures.length > 0) {
  console.error(`\nFAILED:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("\nall tests passed");
process.exit(0);
