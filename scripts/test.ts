/**
 * `npm test`: every test, against real services. Its own databases
 * (charges_test, charges_test_gateway) are dropped and re-created, the
 * production build is made, the simulated gateway and the app are started, then
 * the API/integration tests (node:test) and the browser tests (Playwright) run.
 *
 *   npm test                 everything
 *   npm test -- test/sweep   only the node:test files whose path contains "test/sweep"
 *   npm test -- e2e          only the browser tests
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { provisionAppUser } from "./lib/appUser";
import { loadDotEnv, root, testConfig } from "./lib/config";
import { createDatabase } from "./lib/mariadbServer";
import { prepareDatabase } from "./lib/prepareDatabase";
import { run, startApp, startGateway, type Service } from "./lib/processes";

loadDotEnv();
const config = testConfig();
const filters = process.argv.slice(2);
const nodeFilters = filters.filter((f) => !f.startsWith("e2e"));
const runNodeTests = filters.length === 0 || nodeFilters.length > 0;
const runBrowserTests = filters.length === 0 || filters.some((f) => f.startsWith("e2e"));

const privateDb = await prepareDatabase(config.databaseUrl, { fresh: true });
await createDatabase(config.gatewayDatabaseUrl, { dropFirst: true });
// The app runs as its own least-privilege user; the tests connect as the admin user to seed and inspect.
const appDatabaseUrl = await provisionAppUser(config.databaseUrl);
const appEnv = { ...config.env, DATABASE_URL: appDatabaseUrl };

// Known staff passwords and a demo API key for the browser tests.
Object.assign(process.env, config.env, { DEMO_SUPPORT_PASSWORD: "support-test-password", DEMO_ENGINEER_PASSWORD: "engineer-test-password" });
const { seedDemo } = await import("./lib/seed");
const demo = await seedDemo();

await run("next", ["build"], { ...config.env, NODE_ENV: "production" });

const testEnv = {
  ...config.env,
  TEST_APP_URL: `http://127.0.0.1:${config.appPort}`,
  TEST_APP_PORT: String(config.appPort),
  TEST_GATEWAY_DATABASE_URL: config.gatewayDatabaseUrl,
  TEST_APP_DATABASE_URL: appDatabaseUrl,
  TEST_API_KEY: demo.apiKey,
  TEST_SUPPORT_EMAIL: "support@example.com",
  TEST_SUPPORT_PASSWORD: "support-test-password",
  TEST_ENGINEER_EMAIL: "engineer@example.com",
  TEST_ENGINEER_PASSWORD: "engineer-test-password",
};

const services: Service[] = [];
const failures: string[] = [];
try {
  services.push(await startGateway({ port: config.gatewayPort, databaseUrl: config.gatewayDatabaseUrl, quiet: true }));
  services.push(await startApp({ port: config.appPort, env: appEnv, quiet: true }));

  const files = readdirSync(path.join(root, "test"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/${f}`)
    .filter((f) => nodeFilters.length === 0 || nodeFilters.some((filter) => f.includes(filter)));
  if (runNodeTests) {
    // One file at a time: the fault tests kill and restart servers.
    await run(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=1", "--test-reporter=spec", ...files], testEnv).catch((e) =>
      failures.push(String(e)),
    );
  }
  if (runBrowserTests) {
    await run("playwright", ["test"], testEnv).catch((e) => failures.push(String(e)));
  }
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
