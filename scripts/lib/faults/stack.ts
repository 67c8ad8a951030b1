/**
 * The stack a fault run owns: a private MariaDB for the app (so the run can
 * kill it), the simulated gateway with its state on the main server (as a real
 * provider's is elsewhere), two instances of the production build, the
 * background sweeper and the webhook dispatcher(s), with the timings shortened
 * so that leases end, records are reaped, the ledger is reconciled and
 * deliveries are retried many times in a run.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import * as mariadb from "mariadb";
import { hashApiKey } from "~/server/auth/apiKeyHash";
import { adminDatabaseUrl, gatewayEnv, root, TEST_SEARCH_LAG_MS, testSlot } from "../config";
import { createDatabase, PrivateMariaDb } from "../mariadbServer";
import { applyMigrations } from "../migrate";
import {
  isRunning,
  startApp,
  startDispatcher,
  startGateway,
  startSweeper,
  stopChild,
  type Service,
} from "../processes";

export const RUN_TIMINGS = {
  GATEWAY_TIMEOUT_MS: "1500",
  LEASE_MARGIN_MS: "500",
  REAP_AFTER_MS: "4000",
  SWEEP_INTERVAL_MS: "1000",
  RECONCILE_INTERVAL_MS: "5000",
  /**
   * With GATEWAY=stripe: longer than anything the run holds a request up for on its way to the gateway (a storage
   * stall, at most stallHoldMs: 18 s, begun up to a lease after the attempt, plus what a loaded machine adds to its
   * landing) and than the simulator's search lag, as it must be: Stripe cannot be told a deadline, so "nothing was
   * made" waits this out (operations/finality.ts). 20 s left 3 s to spare: at load 16 one keyless charge landed after
   * its write-off (healed by the ledger, counted as a violation).
   */
  STRIPE_SEARCH_CONSISTENCY_MS: "30000",
  DATABASE_POOL_SIZE: "10",
};

/**
 * The webhook schedule of a fault run: retries every 0.2-2 s, and a delivery given up (or an endpoint disabled)
 * only after 30 min without a 2xx: far past any planned outage (a receiver away for at most 7.5 s, MariaDB or
 * every dispatcher down for seconds) and a 900 s run's drain, so that every delivery must end delivered.
 * Answers slower than WEBHOOK_TIMEOUT_MS are part of the plan (receiverFates).
 */
export const WEBHOOK_TIMINGS = {
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_POLL_INTERVAL_MS: "100",
  WEBHOOK_TIMEOUT_MS: "1000",
  WEBHOOK_RETRY_BASE_MS: "200",
  WEBHOOK_RETRY_MAX_MS: "2000",
  WEBHOOK_RETRY_FOR_MS: String(30 * 60_000),
  WEBHOOK_DISABLE_AFTER_MS: String(30 * 60_000),
};

function withDatabase(url: string, name: string) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export type FaultStack = Awaited<ReturnType<typeof startFaultStack>>;

export async function startFaultStack() {
  const suffix = testSlot === 0 ? "" : String(testSlot);
  const dbPort = 3330 + testSlot;
  const database = new PrivateMariaDb(path.join(root, `.data/faults-mariadb${suffix}`), dbPort);
  const databaseUrl = `mysql://root@127.0.0.1:${dbPort}/charges_faults`;
  const main = adminDatabaseUrl();
  const gatewayDatabaseUrl = withDatabase(main, `charges_faults${suffix}_gateway`);
  // The webhook receivers' own (a merchant's) database: on the main server, which the run does not kill.
  const receiverDatabaseUrl = withDatabase(main, `charges_faults${suffix}_receiver`);
  const gatewayPort = 4110 + 20 * testSlot + 10;
  const appPorts = [3100 + 20 * testSlot + 10, 3100 + 20 * testSlot + 11] as const;

  await database.start();
  await createDatabase(databaseUrl, { dropFirst: true });
  await applyMigrations(databaseUrl);
  await createDatabase(gatewayDatabaseUrl, { dropFirst: true });
  await createDatabase(receiverDatabaseUrl, { dropFirst: true });

  // Two API clients, so that a key can be tried by another client.
  const apiKeys = [0, 1].map(() => `sk_test_${randomBytes(24).toString("base64url")}`);
  const conn = await mariadb.createConnection({
    host: "127.0.0.1",
    port: dbPort,
    user: "root",
    database: "charges_faults",
  });
  for (const [i, key] of apiKeys.entries()) {
    const client = (await conn.query("INSERT INTO api_clients (name) VALUES (?)", [`fault client ${i}`])) as {
      insertId: bigint;
    };
    await conn.query("INSERT INTO api_keys (api_client_id, key_hash, key_prefix) VALUES (?, ?, ?)", [
      client.insertId,
      hashApiKey(key),
      key.slice(0, 12),
    ]);
  }
  await conn.end();

  const env = {
    NODE_ENV: "test",
    DATABASE_URL: databaseUrl,
    // GATEWAY=stripe runs it through the Stripe adapter against the simulator's Stripe mode.
    ...gatewayEnv(`http://127.0.0.1:${gatewayPort}`, { realStripeAllowed: false }),
    SESSION_SECRET: process.env.SESSION_SECRET ?? randomBytes(32).toString("hex"),
    TOTP_ENCRYPTION_KEY: process.env.TOTP_ENCRYPTION_KEY ?? randomBytes(32).toString("hex"),
    ...RUN_TIMINGS,
    ...WEBHOOK_TIMINGS,
  };
  const logs = path.join(root, `.data/faults-logs${suffix}`);
  mkdirSync(logs, { recursive: true });
  const log = (name: string) => ({ log: path.join(logs, `${name}.log`) });
  // What started is stopped if a later start fails: left running, it holds this slot's ports for the next run.
  const apps: Service[] = [];
  let gateway: Service | undefined;
  try {
    gateway = await startGateway({
      port: gatewayPort,
      databaseUrl: gatewayDatabaseUrl,
      searchLagMs: TEST_SEARCH_LAG_MS,
      ...log("gateway"),
    });
    for (const [i, port] of appPorts.entries()) apps.push(await startApp({ port, env, ...log(`app-${i}`) }));
  } catch (error) {
    for (const service of [...apps, gateway]) await service?.stop();
    await database.stop();
    throw error;
  }
  const startedGateway = gateway; // a const, so that stop() below sees it started
  const sweeper = startSweeper(env, log("sweeper"));
  // Appended to one log: a restarted dispatcher's lines follow its predecessor's.
  const startDispatchers = (count: number) =>
    Array.from({ length: count }, (_, i) => startDispatcher(env, log(`dispatcher-${i}`)));
  let dispatchers = startDispatchers(1);

  return {
    env,
    logs,
    database,
    databaseUrl,
    gatewayDatabaseUrl,
    receiverDatabaseUrl,
    apiKeys,
    appUrls: appPorts.map((p) => `http://127.0.0.1:${p}`),
    /** SIGKILL one instance, and start it again after `downMs`. */
    async crashApp(instance: 0 | 1, downMs: number) {
      apps[instance]!.child.kill("SIGKILL");
      await new Promise((r) => setTimeout(r, downMs));
      apps[instance] = await startApp({ port: appPorts[instance], env, ...log(`app-${instance}`) });
    },
    /** SIGKILL MariaDB, and start it again after `downMs`. */
    async crashDatabase(downMs: number) {
      await database.kill();
      await new Promise((r) => setTimeout(r, downMs));
      await database.start();
    },
    /** SIGKILL every webhook dispatcher, and start `count` again after `downMs` (two: both claim at once). */
    async crashDispatchers(downMs: number, count: number) {
      // Waited for: each is gone before the next start (processes.ts: one process each, so SIGKILL reaches it).
      await Promise.all(dispatchers.map((d) => stopChild(d.child, "SIGKILL")));
      await new Promise((r) => setTimeout(r, downMs));
      dispatchers = startDispatchers(count);
    },
    /** How many dispatchers run now. */
    dispatcherCount: () => dispatchers.filter((d) => isRunning(d.child)).length,
    async stopSweeper() {
      await sweeper.stop();
    },
    async stop() {
      await sweeper.stop();
      for (const d of dispatchers) await d.stop();
      for (const app of apps) await app.stop();
      await startedGateway.stop();
      await database.stop();
    },
  };
}
