/**
 * The idempotency protocol on a real multi-primary cluster: three MariaDB
 * Galera nodes, two app instances on two different nodes. `npm run
 * test:cluster` (not part of `npm test`: it needs galera-4; CI runs both).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ChargesClient } from "@charges/client";
import { isApiErrorCode, isRetryableCode } from "@charges/client/errorRegistry";
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

type Answer = {
  status: number;
  replayed: boolean;
  json: { id?: string; amount_cents?: number; error?: { code?: string } };
};

async function post(
  instance: number,
  key: string | null,
  body: object,
  timeoutMs = 10_000,
  path = "/api/charges",
): Promise<Answer> {
  const res = await fetch(`${stack.appUrls[instance]}${path}`, {
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

const refund = (instance: number, key: string, body: { charge: string; amount_cents?: number }) =>
  post(instance, key, body, 10_000, "/api/refunds");

/**
 * `copies` copies of one operation at once, alternating instances; those told to come back with the same key (the
 * error registry's "retry": 409 in progress, or under load a 503 when the database was too busy or the gateway did
 * not answer in time) retry on the other instance until answered. Exactly one fresh 201 among every answer, and
 * every copy ends on the object it made. Returns that object's id.
 */
async function copiesSettleOnOneObject(copies: number, send: (instance: number) => Promise<Answer>, label: string) {
  const comeBack = ({ replayed, json }: Answer) =>
    !replayed && isApiErrorCode(json.error?.code) && isRetryableCode(json.error.code);
  const first = await Promise.all(Array.from({ length: copies }, (_, i) => send(i % 2)));
  assert.ok(
    first.every((a) => a.status === 201 || comeBack(a)),
    `${label}201, 409 request_in_progress or 503: ${tally(first)}`,
  );
  const all = [...first];
  const last = await Promise.all(
    first.map(async (answer, i) => {
      for (let tries = 1; comeBack(answer) && tries <= 30; tries++) {
        await sleep(200);
        answer = await send((i + tries) % 2);
        all.push(answer);
      }
      return answer;
    }),
  );
  const fresh = all.filter((a) => a.status === 201 && !a.replayed);
  assert.equal(fresh.length, 1, `${label}one fresh 201 in all: ${tally(all)}`);
  const id = fresh[0]!.json.id!;
  assert.ok(
    last.every((a) => a.status === 201 && a.json.id === id),
    `${label}every copy ends on ${id}: ${tally(last)}`,
  );
  return id;
}

/** The answers by status and code (or replay), for a failure's message. */
const tally = (answers: Answer[]) =>
  JSON.stringify(
    answers.reduce<Record<string, number>>((counts, a) => {
      const label = `${a.status} ${a.replayed ? "replay" : (a.json.error?.code ?? "fresh")}`;
      return Object.assign(counts, { [label]: (counts[label] ?? 0) + 1 });
    }, {}),
  );

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

/**
 * Each operation ended charged once, or (a gateway call that outlived this stack's short timeouts on a loaded
 * machine) in the final "no charge was made", which the gateway must bear out. Not that some were charged: under a
 * CPU hog every operation of the killed instance was truthfully written off; that charges go through is the other
 * tests' fresh 201s.
 */
async function assertEachAnswerTrue(
  results: Awaited<ReturnType<ChargesClient["createCharge"]>>[],
  customers: string[],
) {
  const charged = results.map((r) => (r.ok && r.status === 201 ? 1 : 0));
  const unanswered = results.filter((r) => !r.ok && r.error?.code !== "request_abandoned");
  assert.deepEqual(unanswered, [], "every operation final: charged, or told that nothing was charged");
  assert.deepEqual(await chargesPerCustomer(customers), charged);
}

/** Gateway charges per customer. */
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

/** A succeeded charge of `amountCents`, made through instance 0: what the refund scenarios refund. */
async function newCharge(amountCents: number): Promise<string> {
  const made = await post(0, `charge-${randomUUID()}`, { ...body(), amount_cents: amountCents });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  return made.json.id!;
}

/** A connection to a live node whose reads wait until every write set committed before them is applied there. */
async function causalConnection() {
  const conn = await stack.cluster.nodes.find((n) => n.running)!.connect("charges_cluster");
  await conn.query("SET SESSION wsrep_sync_wait = 1");
  return conn;
}

type RefundRow = { id: string; amount_cents: number; gateway_refund_id: string; gateway_idempotency_key: string };
type ChargeRow = {
  amount_cents: number;
  amount_refunded_cents: number;
  refund_held_cents: number;
  gateway_charge_id: string;
};

/**
 * Checks one charge's refunds on the cluster against the gateway's and returns the app's: the 201s answered name
 * exactly the app's refunds, each has exactly one gateway refund (same id, amount and, on the simulator's own
 * protocol, key), the charge's refunded amount is their sum and within the charge, and nothing is held any more.
 */
async function refundsAddUp(chargeId: string, answeredIds: string[]): Promise<RefundRow[]> {
  const mariadb = await import("mariadb");
  const { mysqlConnectionOptions } = await import("~/lib/mysqlUrl");
  const [conn, gatewayConn] = [
    await causalConnection(),
    await mariadb.createConnection(mysqlConnectionOptions(stack.gatewayDatabaseUrl)),
  ];
  try {
    const [charge] = (await conn.query(
      `SELECT amount_cents, amount_refunded_cents, refund_held_cents, gateway_charge_id FROM charges WHERE id = ?`,
      [chargeId],
    )) as ChargeRow[];
    const app = (await conn.query(
      "SELECT id, amount_cents, gateway_refund_id, gateway_idempotency_key FROM refunds WHERE charge_id = ?",
      [chargeId],
    )) as RefundRow[];
    const [holds] = await conn.query("SELECT COUNT(*) AS n FROM refund_holds WHERE charge_id = ?", [chargeId]);
    const gateway = await server.gatewayInspect.refundsOfCharge(gatewayConn, charge!.gateway_charge_id);
    const evidence = JSON.stringify({ charge, holds: Number(holds.n), app, gateway });
    assert.deepEqual(
      app.map((r) => r.id).sort(),
      [...answeredIds].sort(),
      `each 201 names one app refund: ${evidence}`,
    );
    const keyed = process.env.GATEWAY !== "stripe"; // Stripe's protocol keeps the key out of the refund row
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    assert.deepEqual(
      gateway.map((g) => ({ id: g.id, amount: g.amount, key: keyed ? g.idempotency_key : null })).sort(byId),
      app
        .map((r) => ({
          id: r.gateway_refund_id,
          amount: r.amount_cents,
          key: keyed ? r.gateway_idempotency_key : null,
        }))
        .sort(byId),
      `one gateway refund per app refund: ${evidence}`,
    );
    const sum = app.reduce((s, r) => s + r.amount_cents, 0);
    assert.equal(charge!.amount_refunded_cents, sum, `refunded is the sum of the refunds: ${evidence}`);
    assert.ok(sum <= charge!.amount_cents, `never more than charged: ${evidence}`);
    assert.deepEqual([charge!.refund_held_cents, Number(holds.n)], [0, 0], `nothing left held: ${evidence}`);
    return app;
  } finally {
    await Promise.all([conn.end(), gatewayConn.end()]);
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

/** `probe`'s first truthy answer, polled every 50 ms; fails naming `what` after `timeoutMs`. */
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

type Connection = Awaited<ReturnType<ClusterStack["cluster"]["nodes"][number]["connect"]>>;

/**
 * Whether a statement beginning `sql` is running on `look`'s node: held up by a test's lock, since these take no
 * time otherwise. The process list, not innodb_trx, which was seen to leave out a transaction in a lock wait.
 */
async function running(look: Connection, sql: string): Promise<boolean> {
  const [row] = await look.query(
    "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE command IN ('Query', 'Execute') AND info LIKE ?",
    [`${sql}%`],
  );
  return Number(row.n) > 0;
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
    const timing = { leaseMs: 60_000, ttlMs: 3_600_000, attemptWindowMs: 120_000 };
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
    await copiesSettleOnOneObject(50, (instance) => post(instance, key, payload), "");
    assert.deepEqual(await chargesPerCustomer([payload.customer_id]), [1]);
    await ledgerAddsUp(since);
  });

  test("slow-gateway burst: 40 operations, each attempt on the other instance, at most one charge each", async () => {
    const since = new Date();
    const client = alternatingClient(400);
    const payloads = Array.from({ length: 40 }, () => body("tok_slow_1000"));
    const results = await Promise.all(payloads.map((p) => client.createCharge(p)));
    assert.ok(
      results.every((r) => r.attempts > 1),
      "every operation timed out once and was retried elsewhere",
    );
    await assertEachAnswerTrue(
      results,
      payloads.map((p) => p.customer_id),
    );
    await ledgerAddsUp(since);
  });

  // Before the tests that kill an instance and a node: refunds race across two nodes only while both are up.
  test("20 refunds of one charge, each its own key, over both instances at once: never more than charged", async () => {
    const since = new Date();
    const charge = await newCharge(1000);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => refund(i % 2, `split-${randomUUID()}`, { charge, amount_cents: 300 })),
    );
    const seen = tally(answers);
    const made = answers.filter((a) => a.status === 201);
    assert.ok(made.length * 300 <= 1000, `over-refunded: ${seen}`);
    assert.ok(
      made.every((a) => !a.replayed && a.json.amount_cents === 300),
      seen,
    );
    // The losers are refused (400 more than is left or nothing left, 409 while refunds in flight hold what they
    // would need), at their claim or by their work's hold.
    const refused = (a: Answer) =>
      (a.status === 400 && ["invalid_request", "charge_already_refunded"].includes(a.json.error?.code ?? "")) ||
      (a.status === 409 && a.json.error?.code === "refund_in_progress");
    assert.ok(
      answers.every((a) => a.status === 201 || refused(a)),
      seen,
    );
    assert.equal(made.length, 3, `every refund that fits is made: ${seen}`);
    await refundsAddUp(
      charge,
      made.map((a) => a.json.id!),
    );
    await ledgerAddsUp(since);
  });

  test("one refund sent 30 times at once over both instances, 5 rounds: one refund, one fresh 201", async () => {
    const since = new Date();
    // Rounds: only in some does a copy's claim on one node race the first one's on the other (a certification loss).
    for (let round = 0; round < 5; round++) {
      const charge = await newCharge(1000);
      const key = `same-refund-${randomUUID()}`;
      // The whole charge: once its hold is in, each copy's precheck finds nothing left and must still find its record.
      const payload = { charge, amount_cents: 1000 };
      const id = await copiesSettleOnOneObject(30, (instance) => refund(instance, key, payload), `round ${round}: `);
      await refundsAddUp(charge, [id]);
    }
    await ledgerAddsUp(since);
  });

  test("a refund's claim and hold aborted by the other node's refund of its charge: nothing half made", async () => {
    // Forced, not hoped for: node 0 holds our claim-and-hold transaction mid-way (after it locked the charge, on a
    // gap lock) while node 1 commits the other refund's end, whose write set node 0 must apply over our lock: ours is
    // aborted (1213, as a certification failure at COMMIT is; that instant cannot be timed from outside).
    const since = new Date();
    const charge = await newCharge(1000);
    const [node0, node1] = [stack.cluster.nodes[0]!, stack.cluster.nodes[1]!];
    const blocker0 = await node0.connect("charges_cluster");
    const blocker1 = await node1.connect("charges_cluster");
    const [look, look1] = [await node0.connect("charges_cluster"), await node1.connect("charges_cluster")];
    // Reads on node 0 wait until what node 1 committed is applied there (the other refund's end, say).
    await look.query("SET SESSION wsrep_sync_wait = 1");
    try {
      // Node 1 inserts no refund row until released: the other refund's completion waits there.
      await blocker1.query("BEGIN");
      await blocker1.query("SELECT id FROM refunds FOR UPDATE");
      const theirs = refund(1, `theirs-${randomUUID()}`, { charge, amount_cents: 400 });
      const theirHold = await until("the other refund's hold, on node 0", async () => {
        const [row] = await look.query("SELECT idempotent_request_id AS id FROM refund_holds WHERE charge_id = ?", [
          charge,
        ]);
        return row as { id: bigint } | undefined;
      });
      await until("the other refund's completion to wait on node 1", () => running(look1, "INSERT INTO refunds"));
      // Node 0 inserts no hold above theirs until released: ours waits there, holding its record and the charge.
      await blocker0.query("BEGIN");
      await blocker0.query(
        "SELECT idempotent_request_id FROM refund_holds WHERE idempotent_request_id > ? FOR UPDATE",
        [theirHold.id],
      );
      const key = `ours-${randomUUID()}`;
      let early: Answer | undefined;
      const ours = refund(0, key, { charge, amount_cents: 400 }).then((a) => (early = a));
      await until("our claim and hold to wait on node 0", async () => {
        assert.equal(early, undefined, `answered before it waited: ${JSON.stringify(early)}`);
        return running(look, "INSERT INTO refund_holds");
      });
      const aborts = async () => Number((await node0.status(["wsrep_local_bf_aborts"])).wsrep_local_bf_aborts);
      const abortsBefore = await aborts();

      await blocker1.query("ROLLBACK");
      const their = await theirs;
      assert.equal(their.status, 201, JSON.stringify(their.json));
      await until("node 0 to abort our transaction for theirs", async () => (await aborts()) > abortsBefore);
      // Ours went round again: its record made alone (committed, so visible here) and waiting to hold. Had the aborted
      // transaction left its record, this claim would have met it (a 409); had it left its hold, the charge shows it.
      const record = await until("our record, claimed again, waiting to hold", async () => {
        const [row] = await look.query(
          "SELECT id, state FROM idempotent_requests WHERE idempotency_key = ? AND route = 'POST /api/refunds'",
          [Buffer.from(key, "latin1")],
        );
        return row && (await running(look, "INSERT INTO refund_holds"))
          ? (row as { id: bigint; state: string })
          : undefined;
      });
      assert.equal(record.state, "in_progress");
      const [state] = await look.query(
        `SELECT c.amount_refunded_cents AS refunded, c.refund_held_cents AS held,
                (SELECT COUNT(*) FROM refund_holds h WHERE h.charge_id = c.id) AS holds,
                (SELECT COUNT(*) FROM refund_holds h LEFT JOIN idempotent_requests r ON r.id = h.idempotent_request_id
                  WHERE r.id IS NULL) AS orphanHolds,
                (SELECT COUNT(*) FROM idempotent_requests r WHERE r.idempotency_key = ?) AS records
           FROM charges c WHERE c.id = ?`,
        [Buffer.from(key, "latin1"), charge],
      );
      assert.deepEqual(
        Object.fromEntries(Object.entries(state).map(([k, v]) => [k, Number(v)])),
        { refunded: 400, held: 0, holds: 0, orphanHolds: 0, records: 1 },
        "only theirs refunded, nothing held, one record of ours",
      );

      await blocker0.query("ROLLBACK");
      const our = await ours;
      assert.deepEqual([our.status, our.replayed], [201, false], JSON.stringify(our.json));
      await refundsAddUp(charge, [their.json.id!, our.json.id!]);
    } finally {
      for (const conn of [blocker0, blocker1, look, look1]) await conn.end().catch(() => {});
    }
    await ledgerAddsUp(since);
  });

  test("an instance killed mid-charge: the other takes the claim after its lease; one charge at most", async () => {
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
    await assertEachAnswerTrue(
      results,
      payloads.map((p) => p.customer_id),
    );
    await ledgerAddsUp(since);
  });

  test("a database node killed mid-run: its instance fails over to the next node, each answer true", async () => {
    const since = new Date();
    const client = alternatingClient(2_500);
    const payloads = Array.from({ length: 20 }, () => body("tok_slow_800"));
    const running = payloads.map((p) => client.createCharge(p));
    await sleep(300);
    await stack.cluster.nodes[0]!.kill();
    const results = await Promise.all(running);
    await assertEachAnswerTrue(
      results,
      payloads.map((p) => p.customer_id),
    );
    // Instance 0 preferred node 0: it answers from another node now.
    const after = await post(0, `after-${randomUUID()}`, body());
    assert.equal(after.status, 201);
    assert.equal(await stack.cluster.clusterSize(), 2);
    await ledgerAddsUp(since);
  });
});
