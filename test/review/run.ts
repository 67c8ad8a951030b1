/**
 * Runs the adversarial review's tests (test/review/*.test.ts) against the real
 * stack, the way scripts/test.ts runs test/*.test.ts: fresh test databases,
 * the simulated gateway, the app from the last production build (`next build`
 * must have run, e.g. by `npm test`). These tests demonstrate findings and are
 * expected to FAIL until the finding is fixed; they are not part of `npm test`.
 *
 *   TEST_SLOT=5 tsx --conditions=react-server test/review/run.ts [filter...]
 *   GATEWAY=stripe TEST_SLOT=5 tsx --conditions=react-server test/review/run.ts stripe
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { provisionAppUser } from "../../scripts/lib/appUser";
import { loadDotEnv, root, TEST_SEARCH_LAG_MS, testConfig } from "../../scripts/lib/config";
import { createDatabase } from "../../scripts/lib/mariadbServer";
import { prepareDatabase } from "../../scripts/lib/prepareDatabase";
import { run, SERVER_CODE_FLAGS, startApp, startGateway, type Service } from "../../scripts/lib/processes";

loadDotEnv();
const config = testConfig();
const filters = process.argv.slice(2);
const files = readdirSync(path.join(root, "test/review"))
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => `test/review/${f}`)
  .filter((f) => filters.length === 0 || filters.some((filter) => f.includes(filter)));

const privateDb = await prepareDatabase(config.databaseUrl, { fresh: true });
await createDatabase(config.gatewayDatabaseUrl, { dropFirst: true });
// As npm test does: the app runs as its own least-privilege user; the tests connect as the admin user.
const appDatabaseUrl = await provisionAppUser(config.databaseUrl);
const appEnv = { ...config.env, DATABASE_URL: appDatabaseUrl };
Object.assign(process.env, config.env);
const { seedDemo } = await import("../../scripts/lib/seed");
const demo = await seedDemo();

const testEnv = {
  ...config.env,
  TEST_APP_URL: `http://127.0.0.1:${config.appPort}`,
  TEST_APP_PORT: String(config.appPort),
  TEST_GATEWAY_DATABASE_URL: config.gatewayDatabaseUrl,
  TEST_GATEWAY_PORT: String(config.gatewayPort),
  TEST_APP_DATABASE_URL: appDatabaseUrl,
  TEST_API_KEY: demo.apiKey,
  TEST_SEARCH_LAG_MS: String(TEST_SEARCH_LAG_MS),
};

const services: Service[] = [];
let failed = false;
try {
  const gatewayDatabase = { port: config.gatewayPort, databaseUrl: config.gatewayDatabaseUrl };
  services.push(await startGateway({ ...gatewayDatabase, searchLagMs: TEST_SEARCH_LAG_MS, quiet: true }));
  console.log(`gateway: ${config.env.GATEWAY} (simulated)`);
  services.push(await startApp({ port: config.appPort, env: appEnv, quiet: true }));
  await run(
    process.execPath,
    [...SERVER_CODE_FLAGS, "--import", "tsx", "--test", "--test-concurrency=1", "--test-reporter=spec", ...files],
    testEnv,
  ).catch(() => (failed = true));
} finally {
  for (const service of services.reverse()) await service.stop();
  await privateDb?.stop();
}
process.exit(failed ? 1 : 0);
