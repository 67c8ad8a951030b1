/**
 * MariaDB dies and comes back while charges are in flight. The app runs against
 * a private MariaDB of its own (the gateway keeps its state elsewhere, as a real
 * provider would), so the test can kill it without touching anything else.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { createDatabase, PrivateMariaDb } from "../scripts/lib/mariadbServer";
import { applyMigrations } from "../scripts/lib/migrate";
import { serverScriptArgs, startGateway, type Service } from "../scripts/lib/processes";
import { chargesOfCustomer, refundsOfCharge } from "~/gateway-sim/inspect";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { gatewayEnv, TEST_SEARCH_LAG_MS } from "../scripts/lib/config";
import { hashApiKey } from "~/server/auth/apiClients";
import {
  chargeBody,
  postCharge,
  postRefund,
  startAppInstance,
  closeConnections,
  waitFor,
  type ApiResponse,
} from "./helpers";

const APP_PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 2;
const APP_URL = `http://127.0.0.1:${APP_PORT}`;
const DB_PORT = 3317 + Number(process.env.TEST_SLOT ?? 0);
// Its data folder is this slot's: two test runs in different slots each restart their own server.
const server = new PrivateMariaDb(path.resolve(`.data/test-restart-mariadb${process.env.TEST_SLOT ?? ""}`), DB_PORT);
const databaseUrl = `mysql://root@127.0.0.1:${DB_PORT}/charges_restart`;
const apiKey = `sk_test_${randomUUID()}`;
// A gateway of its own (its state on the main server, as a real provider's is
// elsewhere), so that this test's charges stay out of the main run's ledger.
const gatewayUrl = (() => {
  const u = new URL(process.env.TEST_GATEWAY_DATABASE_URL!);
  u.pathname = `${u.pathname}_restart`;
  return u.toString();
})();
const GATEWAY_PORT = Number(process.env.TEST_GATEWAY_PORT ?? 4110) + 2;
let gatewayService: Service;
let app: Awaited<ReturnType<typeof startAppInstance>>;
let gatewayPool: mariadb.Pool;

/** What its gateway charged a customer, in the tables of whichever protocol GATEWAY names. */
const gatewayCharges = (customerId: string): Promise<{ id: string }[]> =>
  chargesOfCustomer(gatewayPool, process.env.GATEWAY === "stripe" ? "stripe" : "sim", customerId);

async function query<T>(sql: string, params: unknown[] = []): Promise<T> {
  const conn = await mariadb.createConnection({
    host: "127.0.0.1",
    port: DB_PORT,
    user: "root",
    database: "charges_restart",
  });
  try {
    return (await conn.query(sql, params)) as T;
  } finally {
    await conn.end();
  }
}

// Its own gateway under either protocol (with GATEWAY=stripe the adapter's base URL and key too, or its charges
// would land in the main run's simulator, whose ledger they are not part of).
const appEnv = {
  DATABASE_URL: databaseUrl,
  ...gatewayEnv(`http://127.0.0.1:${GATEWAY_PORT}`, { realStripeAllowed: false }),
};

before(async () => {
  await createDatabase(gatewayUrl, { dropFirst: true });
  gatewayService = await startGateway({
    port: GATEWAY_PORT,
    databaseUrl: gatewayUrl,
    searchLagMs: TEST_SEARCH_LAG_MS,
    quiet: true,
  });
  gatewayPool = mariadb.createPool({ ...mysqlConnectionOptions(gatewayUrl), connectionLimit: 2 });
  await server.start();
  await createDatabase(databaseUrl, { dropFirst: true });
  await applyMigrations(databaseUrl);
  await query("INSERT INTO api_clients (id, name) VALUES (1, 'restart')");
  await query("INSERT INTO api_keys (api_client_id, key_hash, key_prefix) VALUES (1, ?, ?)", [
    hashApiKey(apiKey),
    apiKey.slice(0, 12),
  ]);
  app = await startAppInstance(APP_PORT, appEnv);
});
after(async () => {
  await app?.stop();
  await server.stop();
  await gatewayService?.stop();
  await gatewayPool?.end();
  await closeConnections();
});

/**
 * A server-code CLI, run to its end (exit 0) without blocking this process: waiting in a synchronous call, the
 * test missed the app closing its idle keep-alive sockets meanwhile (after 5 s), and the next request went out
 * on a closed one ("other side closed"), when the CLI took that long on a busy machine.
 */
async function runCli([script, ...args]: [string, ...string[]], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [...serverScriptArgs(script), ...args], { env, stdio: "inherit" });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [code] = await once(child, "exit");
  clearTimeout(timer);
  assert.equal(code, 0, `${[script, ...args].join(" ")} exited ${code}`);
}

/** One pass of the sweeper, as the worker runs it, with short timings. */
const sweepOnce = () =>
  runCli(["src/worker/sweeper.ts", "--once"], {
    ...process.env,
    ...appEnv,
    REAP_AFTER_MS: "1000",
    GATEWAY_TIMEOUT_MS: "500",
    LEASE_MARGIN_MS: "200",
  });

/** The claims' leases (the app's gateway timeout + margin) must run out before the sweep may take them. */
const leasesEnded = () =>
  waitFor(
    "the leases to end",
    async () => {
      const rows = await query<{ n: bigint }[]>(
        "SELECT COUNT(*) AS n FROM idempotent_requests " +
          "WHERE state = 'in_progress' AND lease_expires_at > UTC_TIMESTAMP(6)",
      );
      return Number(rows[0]!.n) === 0;
    },
    20_000,
  );

/**
 * The ledger adds up: the reconciliation of this app and its gateway finds nothing (exit 0). The CLI takes the
 * admin URL first, as npm start does: this server's, not the run's.
 */
const reconcileExitsZero = () =>
  runCli(["scripts/reconcile.ts", "--since", "10m"], { ...process.env, ...appEnv, DATABASE_ADMIN_URL: databaseUrl });

describe("MariaDB restarted while requests are in flight", () => {
  test("clear 503s meanwhile; after the sweep no duplicate charge and no stuck key", async () => {
    const ops = Array.from({ length: 8 }, () => ({
      key: randomUUID(),
      body: chargeBody({ card_token: "tok_slow_1500" }),
    }));
    const inFlight = ops.map((op) => postCharge({ apiKey, baseUrl: APP_URL, ...op }));
    // Kill only once every claim is committed and waiting on the gateway: a fixed
    // sleep killed before the claims on a loaded machine (testing nothing in
    // flight) and in the middle of them on another. Counting committed claims was
    // not enough either: a claim whose commit the app had not yet been told of when
    // the server died never reached the gateway, and was (rightly) abandoned. The
    // gateway records each charge as it arrives (and answers 1.5 s later).
    await waitFor(
      "every charge at the gateway",
      async () => {
        const charged = await Promise.all(ops.map((op) => gatewayCharges(op.body.customer_id)));
        return charged.every((c) => c.length === 1);
      },
      20_000,
    );
    await server.kill();

    const duringOutage = await postCharge({ apiKey, baseUrl: APP_URL, key: randomUUID(), body: chargeBody() });
    assert.equal(duringOutage.status, 503, duringOutage.text);
    assert.equal(duringOutage.json.error.code, "service_unavailable");
    assert.ok(duringOutage.headers.get("retry-after"));

    const first: ApiResponse[] = await Promise.all(inFlight);
    for (const r of first) {
      assert.ok([201, 503].includes(r.status), `${r.status} ${r.text}`);
      if (r.status === 503) assert.equal(r.json.error.code, "service_unavailable");
    }

    await server.start();
    // Whatever the outage left in progress, the sweeper finishes (reconciling with the gateway).
    await leasesEnded();
    await sweepOnce();
    await new Promise((r) => setTimeout(r, 1_100));
    await sweepOnce();
    const stuck = await query<unknown[]>("SELECT id FROM idempotent_requests WHERE state = 'in_progress'");
    assert.equal(stuck.length, 0, "no key left in progress");
    // Every claim had reached the gateway, so none may be written off as abandoned.
    const reconciled = await query<{ n: bigint }[]>(
      "SELECT COUNT(*) AS n FROM idempotent_requests WHERE finished_by = 'reconciled'",
    );
    const answered = first.filter((r) => r.status === 201).length;
    assert.equal(
      Number(reconciled[0]!.n),
      ops.length - answered,
      "the sweeper reconciled every claim the outage cut off",
    );

    for (const op of ops) {
      const retry = await postCharge({ apiKey, baseUrl: APP_URL, ...op });
      assert.equal(retry.status, 201, retry.text);
      const charged = await gatewayCharges(op.body.customer_id);
      assert.equal(charged.length, 1, "charged once at the gateway");
      const local = await query<{ n: bigint }[]>("SELECT COUNT(*) AS n FROM charges WHERE customer_id = ?", [
        op.body.customer_id,
      ]);
      assert.equal(Number(local[0]!.n), 1, "one local charge");
      assert.equal(retry.json.gateway_charge_id, charged[0]!.id);
    }
    await reconcileExitsZero();
  });

  test("refunds in flight: no refund lost or doubled, every hold released or made a refund", async () => {
    // Charges refunded slowly at the gateway, each with two partial refunds under keys of their own.
    const charges: { id: string; gatewayId: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await postCharge({
        apiKey,
        baseUrl: APP_URL,
        key: randomUUID(),
        body: chargeBody({ amount_cents: 1000, card_token: "tok_refund_slow_1500" }),
      });
      assert.equal(res.status, 201, res.text);
      charges.push({ id: res.json.id as string, gatewayId: res.json.gateway_charge_id as string });
    }
    const ops = charges.flatMap((c) =>
      [600, 400].map((amount_cents) => ({ key: randomUUID(), body: { charge: c.id, amount_cents } })),
    );
    const inFlight = ops.map((op) => postRefund({ apiKey, baseUrl: APP_URL, ...op }));
    // Killed once every refund is at the gateway (recorded as it arrives, answered 1.5 s later).
    await waitFor(
      "every refund at the gateway",
      async () => {
        const made = await Promise.all(charges.map((c) => refundsOfCharge(gatewayPool, c.gatewayId)));
        return made.every((m) => m.length === 2);
      },
      20_000,
    );
    await server.kill();
    const first: ApiResponse[] = await Promise.all(inFlight);
    for (const r of first) assert.ok([201, 503].includes(r.status), `${r.status} ${r.text}`);

    await server.start();
    await leasesEnded();
    await sweepOnce();
    await new Promise((r) => setTimeout(r, 1_100));
    await sweepOnce();
    const stuck = await query<unknown[]>("SELECT id FROM idempotent_requests WHERE state = 'in_progress'");
    assert.equal(stuck.length, 0, "nothing left in progress");
    const holds = await query<unknown[]>("SELECT idempotent_request_id FROM refund_holds");
    assert.equal(holds.length, 0, "every hold released or turned into a refund");
    const reconciled = await query<{ n: bigint }[]>(
      "SELECT COUNT(*) AS n FROM idempotent_requests WHERE route = 'POST /api/refunds' AND finished_by = 'reconciled'",
    );
    const answered = first.filter((r) => r.status === 201).length;
    assert.equal(Number(reconciled[0]!.n), ops.length - answered, "the sweeper recorded every refund cut off");

    for (const op of ops) {
      const retry = await postRefund({ apiKey, baseUrl: APP_URL, ...op });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.json.amount_cents, op.body.amount_cents);
    }
    for (const c of charges) {
      const atGateway = await refundsOfCharge(gatewayPool, c.gatewayId);
      const [row] = await query<{ refunded: number; held: number }[]>(
        "SELECT amount_refunded_cents AS refunded, refund_held_cents AS held FROM charges WHERE id = ?",
        [c.id],
      );
      assert.deepEqual(row, { refunded: 1000, held: 0 });
      const local = await query<{ gateway_refund_id: string; amount_cents: number }[]>(
        "SELECT gateway_refund_id, amount_cents FROM refunds WHERE charge_id = ? ORDER BY gateway_refund_id",
        [c.id],
      );
      const gatewaySide = atGateway
        .map((r) => ({ gateway_refund_id: r.id, amount_cents: r.amount }))
        .sort((x, y) => x.gateway_refund_id.localeCompare(y.gateway_refund_id));
      assert.deepEqual(local, gatewaySide, "one app refund per gateway refund, two each");
    }
    await reconcileExitsZero();
  });

  test("a killed server can still be stopped (a failed test's after hook does exactly this)", async () => {
    // A process ended by a signal has exitCode null; stop() once waited for an
    // "exit" that had already fired, and npm test hung until CI's timeout.
    await server.kill();
    const stopped = server.stop().then(() => "stopped");
    const hung = new Promise((r) => setTimeout(r, 5_000, "hung").unref());
    assert.equal(await Promise.race([stopped, hung]), "stopped");
  });
});
