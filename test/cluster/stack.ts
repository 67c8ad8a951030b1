/**
 * The stack of the cluster test: a private three-node Galera cluster, the
 * simulated gateway (its state on the main server, as a real provider's is
 * elsewhere) and two app instances on two different nodes, each with the
 * whole node list in DATABASE_URL so that it fails over when its node dies.
 */
import { randomBytes } from "node:crypto";
import { adminDatabaseUrl, gatewayEnv, slotDatabase, slotPort } from "../../scripts/lib/config";
import { GaleraCluster } from "../../scripts/lib/galera";
import { createDatabase } from "../../scripts/lib/mariadbServer";
import { applyMigrations } from "../../scripts/lib/migrate";
import { startApp, startGateway, type Service } from "../../scripts/lib/processes";

export const TIMINGS = {
  GATEWAY_TIMEOUT_MS: "1500",
  LEASE_MARGIN_MS: "500",
  REAP_AFTER_MS: "4000",
  RECONCILE_INTERVAL_MS: "0",
  STRIPE_SEARCH_CONSISTENCY_MS: "1000",
  DATABASE_POOL_SIZE: "10",
};
export const LEASE_MS = Number(TIMINGS.GATEWAY_TIMEOUT_MS) + Number(TIMINGS.LEASE_MARGIN_MS);

const DATABASE = "charges_cluster";

export type ClusterStack = Awaited<ReturnType<typeof startClusterStack>>;

export async function startClusterStack() {
  const cluster = new GaleraCluster();
  await cluster.start();
  await createDatabase(cluster.nodes[0]!.url + DATABASE);
  await applyMigrations(`${cluster.nodes[0]!.url}${DATABASE}`);

  const main = adminDatabaseUrl();
  const gatewayDatabaseUrl = Object.assign(new URL(main), {
    pathname: `/${slotDatabase("charges_cluster")}_gateway`,
  }).toString();
  await createDatabase(gatewayDatabaseUrl, { dropFirst: true });
  const gatewayPort = slotPort.gateway(12);
  const gateway = await startGateway({
    port: gatewayPort,
    databaseUrl: gatewayDatabaseUrl,
    searchLagMs: 500,
    quiet: true,
  });

  const env = {
    NODE_ENV: "test",
    ...gatewayEnv(`http://127.0.0.1:${gatewayPort}`, { realStripeAllowed: false }),
    SESSION_SECRET: randomBytes(32).toString("hex"),
    TOTP_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    // The claim-conflict counter of each instance (GET /api/metrics) shows the claim itself retried 1213.
    METRICS_TOKEN: randomBytes(24).toString("hex"),
    ...TIMINGS,
  };
  // This process (the test) reads the cluster too: sweeps, the reconciliation, the records.
  Object.assign(process.env, env, { DATABASE_URL: cluster.url(DATABASE, 1) });

  const ports = [slotPort.app(12), slotPort.app(13)];
  /** Instance i prefers node i, then the next ones. */
  const appEnv = (i: number) => ({ ...env, DATABASE_URL: cluster.url(DATABASE, i) });
  const apps: Service[] = await Promise.all(ports.map((port, i) => startApp({ port, env: appEnv(i), quiet: true })));

  return {
    cluster,
    gatewayDatabaseUrl,
    appUrls: ports.map((p) => `http://127.0.0.1:${p}`),
    apps,
    async killApp(i: number) {
      apps[i]!.child.kill("SIGKILL");
      await new Promise((r) => apps[i]!.child.once("exit", r));
    },
    async restartApp(i: number) {
      apps[i] = await startApp({ port: ports[i]!, env: appEnv(i), quiet: true });
    },
    async stop() {
      for (const app of apps) await app.stop();
      await gateway.stop();
      await cluster.stop();
    },
  };
}
