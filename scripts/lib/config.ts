import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";

export const root = path.resolve(import.meta.dirname, "../..");

/** Reads .env (if any) into process.env without overriding what is already set. */
export function loadDotEnv() {
  const file = path.join(root, ".env");
  if (existsSync(file)) process.loadEnvFile(file);
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export type StackConfig = {
  databaseUrl: string;
  gatewayDatabaseUrl: string;
  appPort: number;
  gatewayPort: number;
  /** The environment the app, the sweeper and (in tests) the test runner get. */
  env: Record<string, string>;
};

function stack(databaseUrl: string, appPort: number, gatewayPort: number, extra: Record<string, string>): StackConfig {
  const gatewayDatabaseUrl = withDatabase(databaseUrl, `${new URL(databaseUrl).pathname.slice(1)}_gateway`);
  return {
    databaseUrl,
    gatewayDatabaseUrl,
    appPort,
    gatewayPort,
    env: {
      DATABASE_URL: databaseUrl,
      GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
      SESSION_SECRET: process.env.SESSION_SECRET ?? randomBytes(32).toString("hex"),
      ...extra,
    },
  };
}

const DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/charges";

/** `npm start`: DATABASE_URL from the environment or .env, ports 3000 and 4010. */
export function devConfig(): StackConfig {
  return stack(process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL, Number(process.env.PORT ?? 3000), 4010, {});
}

/**
 * Several test runs can share one machine (and one MariaDB) when each has its own
 * TEST_SLOT (0-9): ports move by 20 per slot and the databases get a suffix.
 */
export const testSlot = Number(process.env.TEST_SLOT ?? 0);
if (!Number.isInteger(testSlot) || testSlot < 0 || testSlot > 9) throw new Error("TEST_SLOT must be 0-9");

/**
 * `npm test`: the same server as DATABASE_URL but its own databases
 * (charges_test, charges_test_gateway), dropped and re-created on every run.
 */
export function testConfig(): StackConfig {
  const base = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const name = testSlot === 0 ? "charges_test" : `charges_test${testSlot}`;
  return stack(withDatabase(base, name), 3100 + 20 * testSlot, 4110 + 20 * testSlot, {
    NODE_ENV: "test",
    // Short enough for the fault tests to see timeouts, long enough for CI's noise.
    GATEWAY_TIMEOUT_MS: "5000",
    REAP_AFTER_MS: "60000",
    DATABASE_POOL_SIZE: "10",
    // Tests reconcile when they mean to (and the run ends with one), not whenever a sweep is due.
    RECONCILE_INTERVAL_MS: "0",
  });
}
