/**
 * The background workers outlive a database that dies as their pool opens a connection. The mariadb driver sets
 * each new connection up with a command of its own (the session's lock wait timeout; SET NAMES where the server's
 * charset is not utf8mb4); before 3.5 a failure of that command was also raised as a promise nobody held, and Node
 * ends a process on that. A fault run's sweeper died of it as MariaDB was killed, and nothing was swept after.
 */
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { after, test } from "node:test";
import { isRunning, startDispatcher, startSweeper, type Service } from "../scripts/lib/processes";
import { closeConnections, db, waitFor } from "./helpers";
import { setupCuttingProxy } from "./setupCuttingProxy";

after(closeConnections);

const CUTS = 3;
const databaseUrl = new URL(process.env.TEST_APP_DATABASE_URL ?? process.env.DATABASE_URL!);
const through = (proxy: { port: number }) => {
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${proxy.port}`;
  return url.toString();
};
// The setting the driver applies to every connection it opens, whatever the test stack's defaults.
const workerEnv = { SWEEP_INTERVAL_MS: "1000", DATABASE_LOCK_WAIT_TIMEOUT_S: "20" };
/** Fails at once, not at the timeout, when a worker has died. */
function living(...services: Service[]) {
  for (const s of services)
    assert.ok(isRunning(s.child), `the ${s.name} died (exit ${s.child.exitCode}, ${s.child.signalCode})`);
}

test("a sweeper and a dispatcher whose first connections are cut off as they are set up work on", async () => {
  const port = Number(databaseUrl.port || 3306);
  const [sweeperProxy, dispatcherProxy] = [await setupCuttingProxy(port, CUTS), await setupCuttingProxy(port, CUTS)];
  const sweeper = startSweeper({ ...workerEnv, DATABASE_URL: through(sweeperProxy) }, { quiet: true });
  const dispatcher = startDispatcher({ ...workerEnv, DATABASE_URL: through(dispatcherProxy) }, { quiet: true });
  try {
    const instance = `${hostname()}:${sweeper.child.pid}`;
    const sweeps = () => db.sweepRun.count({ where: { instance, finishedAt: { not: null } } });
    await waitFor(
      "every cut, a finished sweep, a dispatcher's connection in use",
      async () => {
        living(sweeper, dispatcher);
        const cut = sweeperProxy.cut() === CUTS && dispatcherProxy.cut() === CUTS;
        return cut && dispatcherProxy.passed() > 0 && (await sweeps()) > 0;
      },
      60_000,
    );
    // A second later, both are still at work.
    await new Promise((r) => setTimeout(r, 1_000));
    living(sweeper, dispatcher);
  } finally {
    await Promise.all([sweeper.stop(), dispatcher.stop()]);
    sweeperProxy.close();
    dispatcherProxy.close();
  }
});
