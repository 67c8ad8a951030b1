import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sessionSecretProblem } from "../../src/lib/sessionSecret";
import { totpKeyProblem } from "../../src/lib/totpKeyProblem";

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
  /** The admin connection: creates the database, runs migrations, creates the app's own user. */
  databaseUrl: string;
  gatewayDatabaseUrl: string;
  appPort: number;
  gatewayPort: number;
  /** The environment the app, the sweeper and (in tests) the test runner get; DATABASE_URL is the admin one until
   * the app user is provisioned (scripts/lib/appUser.ts). */
  env: Record<string, string>;
};

/** The key the Stripe adapter uses with the simulator (it accepts any sk_test_ key). */
export const SIMULATOR_STRIPE_KEY = "sk_test_simulator";

/**
 * The gateway settings for a stack whose simulator answers at `simulatorUrl`:
 * GATEWAY (sim by default) and, for GATEWAY=stripe, the adapter pointed at the
 * simulator's Stripe-compatible mode. Only `npm start` may use real Stripe: when
 * STRIPE_SECRET_KEY is given, it is used with STRIPE_API_BASE as set (unset:
 * the SDK's default, api.stripe.com). Tests and benchmarks always use the simulator.
 */
export function gatewayEnv(simulatorUrl: string, opts: { realStripeAllowed: boolean }): Record<string, string> {
  const gateway = process.env.GATEWAY ?? "sim";
  const env: Record<string, string> = { GATEWAY: gateway, GATEWAY_URL: simulatorUrl };
  if (gateway !== "stripe") return env;
  if (opts.realStripeAllowed && process.env.STRIPE_SECRET_KEY) return env;
  return { ...env, STRIPE_SECRET_KEY: SIMULATOR_STRIPE_KEY, STRIPE_API_BASE: simulatorUrl };
}

/**
 * A configured SESSION_SECRET (or TOTP_ENCRYPTION_KEY) must be a good one (the
 * app would refuse it at boot anyway; this says so before the build). Without
 * one, `npm start` makes one and keeps it in .data/ (git-ignored), so sessions
 * and enrolled second factors survive a restart; tests make one per run.
 */
function secret(name: string, problemOf: (value: string) => string | null, keepIn: string | null, prefix = ""): string {
  const configured = process.env[name];
  if (configured) {
    const problem = problemOf(configured);
    if (problem) throw new Error(`${name} ${problem}`);
    return configured;
  }
  if (!keepIn) return prefix + randomBytes(32).toString("hex");
  if (existsSync(keepIn)) return readFileSync(keepIn, "utf8").trim();
  const value = prefix + randomBytes(32).toString("hex");
  mkdirSync(path.dirname(keepIn), { recursive: true });
  writeFileSync(keepIn, `${value}\n`, { mode: 0o600 });
  console.log(`${name} is not set: generated one in ${path.relative(root, keepIn)}`);
  return value;
}

/** The simulator signs its webhooks with what it is given; Stripe's are whsec_ and base64 (src/env.ts checks it). */
const webhookSecretProblem = (value: string) =>
  /^whsec_\w{16,}$/.test(value) ? null : "must be a webhook signing secret (whsec_...)";

const keptIn = (dir: string | null, name: string) => (dir ? path.join(dir, name) : null);

type StackOptions = {
  appPort: number;
  gatewayPort: number;
  realStripeAllowed: boolean;
  extra: Record<string, string>;
  /** Where generated secrets are kept (npm start), or null for new ones per run (tests). */
  secretDir: string | null;
};

function stack(
  databaseUrl: string,
  { appPort, gatewayPort, realStripeAllowed, extra, secretDir }: StackOptions,
): StackConfig {
  const gatewayDatabaseUrl = withDatabase(databaseUrl, `${new URL(databaseUrl).pathname.slice(1)}_gateway`);
  const simulatorUrl = `http://127.0.0.1:${gatewayPort}`;
  return {
    databaseUrl,
    gatewayDatabaseUrl,
    appPort,
    gatewayPort,
    env: {
      DATABASE_URL: databaseUrl,
      ...gatewayEnv(simulatorUrl, { realStripeAllowed }),
      SESSION_SECRET: secret("SESSION_SECRET", sessionSecretProblem, keptIn(secretDir, "session-secret")),
      TOTP_ENCRYPTION_KEY: secret("TOTP_ENCRYPTION_KEY", totpKeyProblem, keptIn(secretDir, "totp-encryption-key")),
      GATEWAY_WEBHOOK_SECRET: secret(
        "GATEWAY_WEBHOOK_SECRET",
        webhookSecretProblem,
        keptIn(secretDir, "gateway-webhook-secret"),
        "whsec_",
      ),
      ...extra,
    },
  };
}

const DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/charges";

/**
 * The one rule for which database a command works on: DATABASE_ADMIN_URL, else DATABASE_URL (older .env files),
 * else the local default. `npm start`, `npm test` (its base), the CLIs and db:migrate all resolve it here, so
 * an API client or staff member made from the command line lands in the database the app serves.
 */
export const adminDatabaseUrl = () =>
  process.env.DATABASE_ADMIN_URL ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;

/**
 * For a command that runs server code in its own process (clients, staff, reconcile): reads .env and points
 * the server's DATABASE_URL at `npm start`'s database, and its gateway at `npm start`'s simulator (on
 * GATEWAY_PORT) unless GATEWAY_URL names another. Call it before anything imports `~/env`.
 */
export function pointAtStart(): string {
  loadDotEnv();
  const url = adminDatabaseUrl();
  process.env.DATABASE_URL = url;
  if (!process.env.GATEWAY_URL) {
    const simulatorUrl = `http://127.0.0.1:${portFrom("GATEWAY_PORT", 4010)}`;
    Object.assign(process.env, gatewayEnv(simulatorUrl, { realStripeAllowed: true }));
  }
  return url;
}

/** A port from the environment variable `name`, or `fallback`; anything else stops the command, naming it. */
function portFrom(name: string, fallback: number): number {
  const value = process.env[name] ?? String(fallback);
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535)
    throw new Error(`${name} must be a port (1-65535), not "${value}"`);
  return port;
}

/** `npm start`: the database of DATABASE_ADMIN_URL (else DATABASE_URL), the app on PORT, the gateway on GATEWAY_PORT */
export function devConfig(): StackConfig {
  const ports = { appPort: portFrom("PORT", 3000), gatewayPort: portFrom("GATEWAY_PORT", 4010) };
  return stack(adminDatabaseUrl(), {
    ...ports,
    realStripeAllowed: true,
    extra: {},
    secretDir: path.join(root, ".data"),
  });
}

/**
 * Several test runs can share one machine (and one MariaDB) when each has its own
 * TEST_SLOT (0-9): ports move by 20 per slot and the databases get a suffix.
 */
export const testSlot = Number(process.env.TEST_SLOT ?? 0);
if (!Number.isInteger(testSlot) || testSlot < 0 || testSlot > 9) throw new Error("TEST_SLOT must be 0-9");

/**
 * The ports of this slot, by band and offset (each band is 20 wide per slot). Taken so far:
 * app band 0 (the suite's app), 1 (crash), 2 (database restart), 3 (API keys), 4-5 (second instances), 6-7 (client
 * address), 8 (key revocation), 9 (finality; and the browser tests' founding incident, a gateway timeout past
 * the client's: never at once, the node tests run before the browser's), 10-11 (fault run),
 * 12-13 (cluster test), 14 (SDK, retry clients), 15-17 (benchmarks: app, floor server, app without idempotency),
 * 18-19 (the soak benchmark's two app instances);
 * gateway band 0, 2, 10, 12 (cluster), 15 (benchmarks), 18 (the soak benchmark), 11, 13, 14 (the fault run's
 * webhook receivers);
 * cluster band 0-11 (three Galera nodes: SQL, group, IST and SST ports).
 */
export const slotPort = {
  app: (offset: number) => fetchable(3100 + 20 * testSlot + offset),
  gateway: (offset: number) => fetchable(4110 + 20 * testSlot + offset),
  cluster: (offset: number) => fetchable(5100 + 20 * testSlot + offset),
};

/**
 * The ports of these bands that cannot be used, each with the spare it moves to, the last of its band: those fetch
 * refuses to connect to (the Fetch standard's "bad ports": `TypeError: fetch failed`, cause "bad port"; slot 4's
 * gateway was 4190), and NATS's default port, taken on machines that run it (slot 5's cluster gateway was 4222).
 */
const BAD_PORT_SPARES = new Map([
  [4190, 4209],
  [4222, 4229],
]);
const fetchable = (port: number) => BAD_PORT_SPARES.get(port) ?? port;

/** A database name of this slot: `name` in slot 0, `name<slot>` in the others. */
export const slotDatabase = (name: string) => (testSlot === 0 ? name : `${name}${testSlot}`);

/**
 * The simulator's search lag in tests, and the Stripe adapter's consistency
 * window: short enough for the fault tests, and the window longer than the lag,
 * as it must be (docs/stripe.md).
 */
export const TEST_SEARCH_LAG_MS = 500;
const TEST_SEARCH_CONSISTENCY_MS = 1_000;

/**
 * `npm test`: the same server as DATABASE_URL but its own databases
 * (charges_test, charges_test_gateway), dropped and re-created on every run.
 * GATEWAY=stripe runs everything through the Stripe adapter, against the
 * simulator (never against Stripe itself).
 */
export function testConfig(): StackConfig {
  const base = adminDatabaseUrl();
  const name = testSlot === 0 ? "charges_test" : `charges_test${testSlot}`;
  const extra = {
    NODE_ENV: "test",
    // Short enough for the fault tests to see timeouts, long enough for CI's noise.
    GATEWAY_TIMEOUT_MS: "5000",
    REAP_AFTER_MS: "60000",
    DATABASE_POOL_SIZE: "10",
    // Sign-ins and test staff at N=2^12, not 2^17: the suite's few hundred hashes took minutes of CPU (test/login
    // checks the production strength and the upgrade of a weaker hash).
    PASSWORD_SCRYPT_LOG2_N: "12",
    // Tests that hold a row lock on purpose outlast the app's lock waits: 20 s, not the server's 50 (every lock
    // wait the app meets otherwise is milliseconds).
    DATABASE_LOCK_WAIT_TIMEOUT_S: "20",
    STRIPE_SEARCH_CONSISTENCY_MS: String(TEST_SEARCH_CONSISTENCY_MS),
    // Tests reconcile when they mean to (and the run ends with one), not whenever a sweep is due.
    RECONCILE_INTERVAL_MS: "0",
    // The tests play a trusted proxy: each test browser's X-Forwarded-For gives it an address of its own
    // (test/clientAddress.test.ts checks 0 and 2 hops on instances of its own).
    TRUSTED_PROXY_HOPS: "1",
    // A trickled body is answered 408 after this long (test/httpEdges.test.ts; 15 s by default).
    BODY_READ_TIMEOUT_MS: "3000",
    // Dashboard refunds: the tests refund far more per person than a person would; a refund above $50 000 waits
    // for a second person's approval. test/staffRefundControls.test.ts runs an instance with tight controls.
    STAFF_REFUND_MAX_PER_HOUR: "100000",
    STAFF_REFUND_MAX_PER_DAY: "100000",
    STAFF_REFUND_MAX_CENTS_PER_HOUR: "1000000000",
    STAFF_REFUND_MAX_CENTS_PER_DAY: "1000000000",
    STAFF_REFUND_APPROVAL_ABOVE_CENTS: "5000000",
    // Webhooks: the tests' receivers listen on 127.0.0.1, and retries, give-ups and disabling take seconds.
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    // The default 250 ms poll (100 ms had every lane's idle dispatcher claim 10 times a second, for nothing).
    WEBHOOK_TIMEOUT_MS: "2000",
    WEBHOOK_RETRY_BASE_MS: "200",
    WEBHOOK_RETRY_MAX_MS: "1000",
    WEBHOOK_RETRY_FOR_MS: "8000",
    WEBHOOK_DISABLE_AFTER_MS: "6000",
    WEBHOOK_ROTATION_OVERLAP_MS: "60000",
    // GET /api/metrics answers this run's tests (test/metrics.test.ts).
    METRICS_TOKEN: process.env.METRICS_TOKEN ?? randomBytes(24).toString("hex"),
  };
  const ports = { appPort: slotPort.app(0), gatewayPort: slotPort.gateway(0) };
  return stack(withDatabase(base, name), { ...ports, realStripeAllowed: false, extra, secretDir: null });
}
