/**
 * The idempotency protocol on a real multi-primary cluster: three MariaDB
 * Galera nodes, two app instances on two different nodes. `npm run
 * test:cluster` (not part of `npm test`: it needs galera-4; CI runs both).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ChargesClient } from "~/client";
import { startClusterStack, LEASE_MS, type ClusterStack } from "./stack";

let stack: ClusterStack;
let apiKey: string;
let server: Awaited<ReturnType<typeof serverModules>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Server code, imported once the stack has pointed this process's environment at the cluster. */
async function serverModules() {
  const [{ db, disconnectDatabase }, { runSweep }, ledger, { createApiClient }, records, gatewayInspect] =
    await Promise.all([
      import("~/server/db"),
      import("~/server/sweep/runSweep"),
      import("~/server/ledger/invariants"),
      import("~/server/auth/apiClients"),
      import("~/server/idempotency/records"),
      import("~/gateway-sim/inspect"),
    ]);
  return { db, disconnectDatabase, runSweep, ledger, createApiClient, records, gatewayInspect };
}

before(async () => {
  stack = await startClusterStack();
  server = await serverModules();
  ({ apiKey } = await server.createApiClient(`cluster ${randomUUID().slice(0, 6)}`));
});
after(async () => {
  await server?.disconnectDatabase();
  await stack?.stop();
});

type Answer = { status: number; replayed: boolean; json: { id?: string; error?: { code?: string } } };

async function post(instance: number, key: string | null, body: object, timeoutMs = 10_000): Promise<Answer> {
  const res = await fetch(`${stack.appUrls[instance]}/api/charges`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${apiKey}`,
      "Content-Type": "application/json",
      ...(key ? { "Idempotency-Key": key } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, replayed: res.headers.get("idempotent-replay") === "true", json: await res.json() };
}

/** Claims that lost a lock conflict and went round again, summed over both instances (GET /api/metrics). */
async function claimConflicts(): Promise<number> {
  let total = 0;
  for (const url of stack.appUrls) {
    const res = await fetch(`${url}/api/metrics`, {
      headers: { Authorization: `Bearer ${process.env.METRICS_TOKEN}` },
    });
    assert.equal(res.status, 200, `metrics of ${url}`);
    const line = (await res.text()).split("\n").find((l) => l.startsWith("charges_idempotency_claim_conflicts_total "));
    total += Number(line?.split(" ")[1] ?? NaN);
  }
  return total;
}

const body = (card = "tok_visa") => ({
  amount_cents: 1234,
  currency: "usd",
  card_token: card,
  customer_id: `cus_cl_${randomUUID().slice(0, 12)}`,
});

/** An SDK client whose every attempt goes to the next instance (the other node), and past one that is down. */
function alternatingClient(attemptTimeoutMs: number) {
  let next = 0;
  const fetchAcross: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    for (let tries = 0; ; tries++) {
      const base = new URL(stack.appUrls[next++ % 2]!);
      url.host = base.host;
      try {
        return await fetch(url, init);
      } catch (error) {
        if ((error as Error).name === "TimeoutError" || tries >= 1) throw error;
      }
    }
  };
  return new ChargesClient({
    baseUrl: stack.appUrls[0]!,
    apiKey,
    attemptTimeoutMs,
    deadlineMs: 60_000,
    baseDelayMs: 100,
    fetch: fetchAcross,
  });
}

/** Gateway charges per customer (must be 1 each). */
async function chargesPerCustomer(customers: string[]): Promise<number[]> {
  const mariadb = await import("mariadb");
  const { mysqlConnectionOptions } = await import("~/lib/mysqlUrl");
  const conn = await mariadb.createConnection(mysqlConnectionOptions(stack.gatewayDatabaseUrl));
  try {
    const kind = process.env.GATEWAY === "stripe" ? "stripe" : "sim";
    return await Promise.all(
      customers.map(async (c) => (await server.gatewayInspect.chargesPerCustomer(conn, kind, c))[0] ?? 0),
    );
  } finally {
    await conn.end();
  }
}

/**
 * After each scenario: once the last leases are over, a sweep finishes what
 * nobody retried, the reconciliation compares the gateway's charges with the
 * app's and finds (and repairs) nothing, and no record is left in progress.
 */
async function ledgerAddsUp(since: Date) {
  await sleep(LEASE_MS + 500);
  await server.runSweep({ reapAfterMs: 0, reconcile: false });
  const report = await server.ledger.checkLedgerInvariants({ since: new Date(since.getTime() - 1_000) });
  assert.ok(report.ok, server.ledger.describeReport(report));
  assert.equal(report.repaired, 0, server.ledger.describeReport(report));
  assert.equal(await server.db.idempotentRequest.count({ where: { state: "in_progress" } }), 0);
}

/** Certification conflicts seen by the live nodes (local certification failures and brute-force aborts). */
async function conflictsSoFar(): Promise<number> {
  let total = 0;
  for (const node of stack.cluster.nodes.filter((n) => n.running)) {
    const s = await node.status(["wsrep_local_cert_failures", "wsrep_local_bf_aborts"]);
    total += Number(s.wsrep_local_cert_failures ?? 0) + Number(s.wsrep_local_bf_aborts ?? 0);
  }
  return total;
}

describe("a three-node Galera cluster, two app instances on two nodes", () => {
  test("conflicting claims committed on two nodes at once: 1213 at certification, not 1062", async () => {
    const since = new Date();
    const [client] = await server.db.apiClient.findMany({ take: 1, orderBy: { id: "desc" } });
    const claim = {
      idempotencyKey: `cert-${randomUUID()}`,
      route: "POST /api/charges",
      apiClientId: client!.id,
      requestHash: "0".repeat(64),
    };
    const timing = { leaseMs: 60_000, ttlMs: 3_600_000 };
    const { sql, values } = server.records.claimStatement(claim, timing);
    const asUtc = values.map((v) => (v instanceof Date ? v.toISOString().slice(0, 23).replace("T", " ") : v));
    const [node0, node1] = [
      await stack.cluster.nodes[0]!.connect("charges_cluster"),
      await stack.cluster.nodes[1]!.connect("charges_cluster"),
    ];
    try {
      // Node 1 inserts the key in an open transaction; node 0 commits the same key meanwhile.
      await node1.query("START TRANSACTION");
      await node1.query(sql, asUtc);
      await node0.query(sql, asUtc);
      const error = await node1.query("COMMIT").then(
        () => undefined,
        (e: { errno?: number }) => e,
      );
      assert.equal(error?.errno, 1213, "the later commit fails certification (a deadlock error), not the unique index");
      const rows = await node0.query("SELECT COUNT(*) AS n FROM idempotent_requests WHERE idempotency_key = ?", [
        values[0],
      ]);
      assert.equal(Number(rows[0].n), 1, "one record for the key, cluster-wide");
    } finally {
      await node0.query("DELETE FROM idempotent_requests WHERE idempotency_key = ?", [values[0]]);
      await Promise.all([node0.end(), node1.end()]);
    }
    void since;
  });

  test("one new key on both instances at once: the claim retries 1213 and ends on the duplicate-key path", async () => {
    const since = new Date();
    const before = await conflictsSoFar();
    const claimConflictsBefore = await claimConflicts();
    let rounds = 0;
    // Each round, two requests for one new key reach the two nodes together; go on until a claim INSERT has
    // failed certification (bounded), each round ending with one charge and no error.
    for (; rounds < 60 && (rounds < 10 || (await claimConflicts()) === claimConflictsBefore); rounds++) {
      const key = `race-${randomUUID()}`;
      const payload = body();
      const answers = await Promise.all([post(0, key, payload), post(1, key, payload)]);
      const statuses = answers.map((a) => `${a.status}${a.replayed ? " replay" : ""}`).sort();
      assert.ok(
        answers.every((a) => a.status === 201 || a.status === 409),
        statuses.join(", "),
      );
      assert.equal(answers.filter((a) => a.status === 201 && !a.replayed).length, 1, statuses.join(", "));
      assert.deepEqual(await chargesPerCustomer([payload.customer_id]), [1]);
    }
    assert.ok(
      (await conflictsSoFar()) > before,
      `certification conflicts happened in ${rounds} rounds (and were retried)`,
    );
    // Not only somewhere (a completion, say): the claim INSERT itself failed certification and went round again,
    // then ended on the duplicate-key path (one fresh 201 and one charge per round, asserted above).
    assert.ok((await claimConflicts()) > claimConflictsBefore, `the claim retried a 1213 in ${rounds} rounds`);
    await ledgerAddsUp(since);
  });

  test("50 identical requests spread over both instances: one charge, one fresh 201", async () => {
    const since = new Date();
    const key = `same-${randomUUID()}`;
    const payload = body("tok_slow_300");
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => post(i % 2, key, payload)));
    const fresh = answers.filter((a) => a.status === 201 && !a.replayed);
    assert.equal(fresh.length, 1, JSON.stringify(answers.map((a) => a.status)));
    assert.ok(answers.every((a) => (a.status === 201 && (a.replayed || a === fresh[0])) || a.status === 409));
    assert.ok(
      answers.filter((a) => a.status === 201).every((a) => a.json.id === fresh[0]!.json.id),
      "every 201 names the charge",
    );
    assert.deepEqual(await chargesPerCustomer([payload.customer_id]), [1]);
    await ledgerAddsUp(since);
  });

  test("slow-gateway burst: 40 operations, each attempt on the other instance, one charge each", async () => {
    const since = new Date();
    const client = alternatingClient(400);
    const payloads = Array.from({ length: 40 }, () => body("tok_slow_1000"));
    const results = await Promise.all(payloads.map((p) => client.createCharge(p)));
    assert.ok(
      results.every((r) => r.ok && r.status === 201),
      JSON.stringify(results.filter((r) => !r.ok)),
    );
    assert.ok(
      results.every((r) => r.attempts > 1),
      "every operation timed out once and was retried elsewhere",
    );
    assert.deepEqual(
      await chargesPerCustomer(payloads.map((p) => p.customer_id)),
      payloads.map(() => 1),
    );
    await ledgerAddsUp(since);
  });

  test("an instance killed mid-charge: the other takes the claim over after its lease, one charge each", async () => {
    const since = new Date();
    const client = alternatingClient(2_500);
    const payloads = Array.from({ length: 10 }, () => body("tok_slow_1200"));
    const running = payloads.map(async (p) => {
      const key = `killed-${randomUUID()}`;
      // The first attempt on instance 0, which dies with the gateway calls pending.
      await post(0, key, p, 3_000).catch(() => undefined);
      return client.createCharge(p, { idempotencyKey: key });
    });
    await sleep(400);
    await stack.killApp(0);
    const results = await Promise.all(running);
    await stack.restartApp(0);
    assert.ok(
      results.every((r) => r.ok && r.status === 201),
      JSON.stringify(results.filter((r) => !r.ok)),
    );
    assert.deepEqual(
      await chargesPerCustomer(payloads.map((p) => p.customer_id)),
      payloads.map(() => 1),
    );
    await ledgerAddsUp(since);
  });

  test("a database node killed mid-run: its instance fails over to the next node, one charge each", async () => {
    const since = new Date();
    const client = alternatingClient(2_500);
    const payloads = Array.from({ length: 20 }, () => body("tok_slow_800"));
    const running = payloads.map((p) => client.createCharge(p));
    await sleep(300);
    await stack.cluster.nodes[0]!.kill();
    const results = await Promise.all(running);
    assert.ok(
      results.every((r) => r.ok && r.status === 201),
      JSON.stringify(results.filter((r) => !r.ok)),
    );
    assert.deepEqual(
      await chargesPerCustomer(payloads.map((p) => p.customer_id)),
      payloads.map(() => 1),
    );
    // Instance 0 preferred node 0: it answers from another node now.
    const after = await post(0, `after-${randomUUID()}`, body());
    assert.equal(after.status, 201);
    assert.equal(await stack.cluster.clusterSize(), 2);
    await ledgerAddsUp(since);
  });
});
