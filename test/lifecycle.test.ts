/**
 * The record lifecycle against the real database: what a request gets for each
 * phase a record can be in, and that the fencing token keeps a stalled holder
 * from acting once someone else took its claim.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import type { FinishedBy } from "~/generated/prisma/client";
import { atomically, database, db, execute, insertThenRead, isDuplicateKeyError, type Statement } from "~/server/db";
import {
  runIdempotent,
  type Admission,
  type IdempotencyRecord,
  type IdempotentOutcome,
  type WorkResult,
} from "~/server/idempotency";
import { keyToBytes, type PhaseName } from "~/server/idempotency/reading";
import { findById } from "~/server/idempotency/queries";
import * as records from "~/server/idempotency/records";
import { claimReadStatement, claimStatement, withdrawStatement } from "~/server/idempotency/records";
import { keylessCountStatement } from "~/server/rollout/counters";
import { closeConnections, newApiClient, onlyWork, recordOf, seedRecord, uniqueKey } from "./helpers";

/** Its own route: these operations are not charges, and the ledger checks leave them be. */
const ROUTE = "POST /test/lifecycle";
const BODY = { amount_cents: 100 };
const STORED = { status: 201, body: '{"stored":true}' };
const DONE: WorkResult = { kind: "complete", response: { status: 200, body: '{"done":true}' }, writes: [] };

let clientId: number;
let otherClientId: number;
before(async () => {
  clientId = (await newApiClient("lifecycle")).id;
  otherClientId = (await newApiClient("lifecycle-other")).id;
});
after(async () => {
  await db.idempotentRequest.deleteMany({ where: { route: ROUTE } });
  await closeConnections();
});

type Case = "same payload" | "other payload" | "other client" | "expired";
/** `late`: first attempted longer ago than the attempt window, so that a retry may only ask what happened. */
type Seed = { phase: PhaseName; finishedBy?: FinishedBy; late?: boolean };
/** What the request must get, and what must have happened to the record. */
type Expected = {
  answer: IdempotentOutcome["kind"];
  workRan: boolean;
  /** Whether the settle ran (asking the gateway what happened, creating nothing) instead. */
  settleRan?: boolean;
  /**
   * The record afterwards: the same one (attempt), a new one, or untouched; `asked`: taken over to ask, the answer
   * not known yet (this test's settle learns nothing), released again.
   */
  record: "untouched" | "taken" | "asked" | "new";
  reuseRecorded: boolean;
};

const reused: Expected = { answer: "key_reused", workRan: false, record: "untouched", reuseRecorded: true };
const taken: Expected = { answer: "fresh", workRan: true, record: "taken", reuseRecorded: false };
const busy: Expected = { answer: "in_progress", workRan: false, record: "untouched", reuseRecorded: false };
const asked: Expected = {
  answer: "in_progress",
  workRan: false,
  settleRan: true,
  record: "asked",
  reuseRecorded: false,
};

const seeds: [string, Seed][] = [
  ["held", { phase: "held" }],
  ["lease_expired", { phase: "lease_expired" }],
  ["released", { phase: "released" }],
  ["lease_expired, past its attempt window", { phase: "lease_expired", late: true }],
  ["released, past its attempt window", { phase: "released", late: true }],
  ["complete (by its request)", { phase: "complete", finishedBy: "request" }],
  ["complete (reconciled)", { phase: "complete", finishedBy: "reconciled" }],
  ["complete (abandoned)", { phase: "complete", finishedBy: "abandoned" }],
];

function expected(seed: Seed, which: Case): Expected {
  if (which === "other payload" || which === "other client") return reused;
  if (seed.phase === "complete") {
    return which === "expired"
      ? { answer: "fresh", workRan: true, record: "new", reuseRecorded: false } // a new operation under the key
      : { answer: "replay", workRan: false, record: "untouched", reuseRecorded: false };
  }
  // An in-progress record never expires: expired or not, the same answer. Past its attempt window a retry may
  // only ask what happened (Timing), never call the gateway again: its answer's time does not move.
  if (seed.phase === "held") return busy;
  return seed.late ? asked : taken;
}

describe("every phase x every kind of request (the decision table)", () => {
  for (const [name, seed] of seeds) {
    for (const which of ["same payload", "other payload", "other client", "expired"] as Case[]) {
      const want = expected(seed, which);
      const title = `${name} + ${which} -> ${want.answer}${want.workRan ? ", work runs" : ""}, record ${want.record}`;
      test(title, async () => {
        const key = uniqueKey("table");
        const seeded = await seedRecord({
          apiClientId: clientId,
          phase: seed.phase,
          finishedBy: seed.finishedBy,
          response: STORED,
          key,
          route: ROUTE,
          body: BODY,
          ageMs: seed.late ? env.REAP_AFTER_MS + 1_000 : 1_000,
          expiresAt: which === "expired" ? new Date(Date.now() - 1_000) : undefined,
        });
        let workRan = false;
        let settleRan = false;
        const outcome = await runIdempotent(
          {
            idempotencyKey: key,
            route: ROUTE,
            apiClientId: which === "other client" ? otherClientId : clientId,
            requestHash: which === "other payload" ? "f".repeat(64) : seeded.requestHash,
          },
          {
            work: async () => {
              workRan = true;
              return DONE;
            },
            settle: async () => {
              settleRan = true;
              return { kind: "unknown" };
            },
          },
        );

        assert.equal(outcome.kind, want.answer);
        assert.equal(settleRan, want.settleRan ?? false, "whether the settle ran");
        if (outcome.kind === "replay") assert.deepEqual(outcome.response, STORED, "the stored bytes");
        if (outcome.kind === "fresh") assert.deepEqual(outcome.response, DONE.kind === "complete" && DONE.response);
        assert.equal(workRan, want.workRan, "whether the work ran");

        const after = (await recordOf(key, ROUTE))!;
        const reuses = await db.keyReuseAttempt.count({ where: { idempotencyKey: keyToBytes(key) } });
        assert.equal(reuses, want.reuseRecorded ? 1 : 0, "whether a reuse was recorded");
        switch (want.record) {
          case "untouched":
            assert.equal(after.id, seeded.id);
            assert.equal(after.attempt, seeded.attempt);
            assert.equal(after.phase.name, seeded.phase.name);
            break;
          case "taken":
            assert.equal(after.id, seeded.id, "the same operation");
            assert.equal(after.attempt, seeded.attempt + 1, "under the next fencing token");
            assert.equal(after.phase.name, "complete");
            assert.ok(after.expiresAt.getTime() > Date.now() + 23 * 3_600_000, "its lifetime starts again");
            break;
          case "asked":
            assert.equal(after.id, seeded.id, "the same operation");
            assert.equal(after.attempt, seeded.attempt + 1, "under the next fencing token");
            assert.equal(after.phase.name, "released", "not known yet: given back for the next to ask");
            assert.equal(after.lastAttemptAt.getTime(), seeded.lastAttemptAt.getTime(), "its attempt time stays");
            break;
          case "new":
            assert.notEqual(after.id, seeded.id, "the expired record made way for a new operation");
            assert.equal(after.attempt, 1);
            break;
        }
      });
    }
  }
});

describe("each transition leaves the record its records.ts function says (the pure view beside its SQL)", () => {
  /**
   * The process's view of a record it just moved, against the row re-read. Times in the view are measured from
   * before the statement was sent, so they are never later than the database's (a lease it works to ends no
   * later than the one others judge), and at most a moment earlier.
   */
  function assertLeft(view: IdempotencyRecord, reread: IdempotencyRecord | null) {
    assert.ok(reread, "the row exists");
    const { phase: viewPhase, lastAttemptAt, createdAt, updatedAt, expiresAt, ...ids } = view;
    const { phase: rowPhase, ...rowRest } = reread;
    for (const [name, value] of Object.entries(ids)) {
      assert.deepEqual(rowRest[name as keyof typeof rowRest], value, name);
    }
    assert.equal(rowPhase.name, viewPhase.name, "phase");
    const close = (name: string, mine: Date, theirs: Date) => {
      const ahead = theirs.getTime() - mine.getTime();
      assert.ok(ahead >= 0 && ahead < 2_000, `${name}: the row's ${theirs.toISOString()}, mine ${mine.toISOString()}`);
    };
    if ("leaseExpiresAt" in viewPhase && "leaseExpiresAt" in rowPhase) {
      close("lease", viewPhase.leaseExpiresAt, rowPhase.leaseExpiresAt);
    }
    if (viewPhase.name === "complete" && rowPhase.name === "complete") {
      assert.equal(rowPhase.finishedBy, viewPhase.finishedBy);
      assert.deepEqual(rowPhase.response, viewPhase.response);
    }
    close("lastAttemptAt", lastAttemptAt, reread.lastAttemptAt);
    close("createdAt", createdAt, reread.createdAt);
    close("updatedAt", updatedAt, reread.updatedAt);
    close("expiresAt", expiresAt, reread.expiresAt);
  }

  const claimInput = (key: string) => ({
    idempotencyKey: key,
    route: ROUTE,
    apiClientId: clientId,
    requestHash: "d".repeat(64),
  });

  test("claim, renew, release, take (retry), complete", async () => {
    const claimed = await records.claim(claimInput(uniqueKey("after")), new Date());
    assert.ok("claimed" in claimed);
    assertLeft(claimed.claimed, await findById(claimed.claimed.id));

    const renewed = await records.renew(claimed.claimed, new Date(), "retry");
    assert.ok(renewed);
    assertLeft(renewed, await findById(renewed.id));

    await records.release(renewed, "outcome unknown");
    const released = (await findById(renewed.id))!;
    assert.equal(released.phase.name, "released");

    const taken = await records.take(released, new Date(), "retry");
    assert.ok(taken);
    assertLeft(taken, await findById(taken.id));
    assert.equal(taken.attempt, 2);

    const response = { status: 201, body: '{"after":true}', requestId: "req_after" };
    const completed = await records.complete(taken, response, [], "request");
    assert.ok(completed);
    assertLeft(completed, await findById(completed.id));
  });

  test("take by recovery leaves the attempt time where it was", async () => {
    const claimed = await records.claim(claimInput(uniqueKey("after-recovery")), new Date(Date.now() - 5_000));
    assert.ok("claimed" in claimed);
    await records.release(claimed.claimed, "outcome unknown");
    const released = (await findById(claimed.claimed.id))!;
    const taken = await records.take(released, new Date(), "recovery");
    assert.ok(taken);
    assert.equal(taken.lastAttemptAt.getTime(), released.lastAttemptAt.getTime());
    assertLeft(taken, await findById(taken.id));
  });
});

describe("fencing tokens", () => {
  test("a stalled holder cannot complete, release or renew once a retry took its claim over", async () => {
    const key = uniqueKey("fence");
    const stalled = await seedRecord({
      apiClientId: clientId,
      phase: "lease_expired",
      key,
      route: ROUTE,
      body: BODY,
      ageMs: 1_000,
    });
    const retry = await runIdempotent(
      { idempotencyKey: key, route: ROUTE, apiClientId: clientId, requestHash: stalled.requestHash },
      onlyWork(async () => DONE),
    );
    assert.equal(retry.kind, "fresh");

    // The old holder wakes up and tries to store its own answer under attempt 1.
    assert.equal(await records.complete(stalled, { status: 201, body: "stale" }, [], "request"), null);
    await records.release(stalled, "outcome unknown");
    assert.equal(await records.renew(stalled, new Date(), "retry"), null);
    const after = (await recordOf(key, ROUTE))!;
    assert.equal(after.attempt, 2);
    assert.deepEqual(
      after.phase.name === "complete" && after.phase.response,
      DONE.kind === "complete" && DONE.response,
    );
  });

  test("a keyless request whose record was taken over mid-work gets a handle, never a second claim", async () => {
    // Its process stalled past the lease and the sweeper took the record over (attempt 2) while the work was at
    // the gateway: the completion loses the fence. A keyless request has no key to wait under, so Prefer: wait
    // must not send it round again: a new claim would be a new gateway key, and a second charge.
    let runs = 0;
    const outcome = await runIdempotent(
      { idempotencyKey: null, route: ROUTE, apiClientId: clientId, requestHash: "e".repeat(64) },
      onlyWork(async (held) => {
        runs += 1;
        await execute({
          sql: "UPDATE idempotent_requests SET attempt = attempt + 1 WHERE id = ?",
          values: [held.record.id],
        });
        return DONE;
      }),
      { waitMs: 2_000 },
    );
    assert.equal(runs, 1, "the work ran once");
    assert.equal(outcome.kind, "unknown_outcome", "its outcome is the sweeper's to find: the client gets a handle");
    const taken = outcome.kind === "unknown_outcome" && (await findById(outcome.requestId));
    assert.ok(taken && taken.attempt === 2 && taken.idempotencyKey === null, "the handle names the taken record");
  });

  test("a keyless request whose outcome could not be stored gets a handle, not an error that says retry", async () => {
    // The gateway answered, then storing its answer failed (here: a write the database refuses). Keyed, the error
    // is answered 503 and the client retries under its key; keyless, a retry would be a second charge.
    const failingWrite: Statement = { sql: "INSERT INTO no_such_table_for_this_test VALUES (1)", values: [] };
    const outcome = await runIdempotent(
      { idempotencyKey: null, route: ROUTE, apiClientId: clientId, requestHash: "f".repeat(64) },
      onlyWork(async () => ({ kind: "complete", response: STORED, writes: [failingWrite] })),
    );
    assert.equal(outcome.kind, "unknown_outcome");
    const record = outcome.kind === "unknown_outcome" && (await findById(outcome.requestId));
    assert.ok(record && record.phase.name === "released", "released for the sweeper, which asks the gateway");
  });

  test("a keyless request whose charge the sweeper wrote off meanwhile is not told 'no charge'", async () => {
    // The gateway answered this request's work, but only after the sweeper had taken the record over and found
    // nothing (a gateway that broke its Charge-Not-After; Stripe has none): the stored write-off is wrong, and a
    // client without a key that believed it would charge again.
    const outcome = await runIdempotent(
      { idempotencyKey: null, route: ROUTE, apiClientId: clientId, requestHash: "a".repeat(64) },
      onlyWork(async (held) => {
        await execute({
          sql: `UPDATE idempotent_requests SET attempt = attempt + 1, state = 'complete', finished_by = 'abandoned',
                  lease_expires_at = NULL, response_status = 500,
                  response_body = '{"error":{"code":"request_abandoned"}}' WHERE id = ?`,
          values: [held.record.id],
        });
        return { kind: "complete", response: STORED, writes: [{ sql: "DO 1", values: [] }] };
      }),
    );
    assert.equal(outcome.kind, "unknown_outcome", "not the write-off: the gateway answered this request's work");
  });

  test("of two retries racing to take a released claim over, exactly one runs the work", async () => {
    const key = uniqueKey("race");
    const released = await seedRecord({ apiClientId: clientId, phase: "released", key, route: ROUTE, body: BODY });
    let runs = 0;
    const slowWork = async () => {
      runs += 1;
      await new Promise((r) => setTimeout(r, 300));
      return DONE;
    };
    const claim = { idempotencyKey: key, route: ROUTE, apiClientId: clientId, requestHash: released.requestHash };
    // Not through this process's memory: each call decides from the record alone.
    const [a, b] = await Promise.all([
      records.take(released, new Date(), "retry"),
      records.take(released, new Date(), "retry"),
    ]);
    assert.equal([a, b].filter(Boolean).length, 1, "one take matched");
    const outcome = await runIdempotent(claim, onlyWork(slowWork));
    assert.equal(outcome.kind, "in_progress", "the record is held by the winner's attempt");
    assert.equal(runs, 0);
  });
});

describe("the claim's read, sent with its INSERT", () => {
  // Driver-level, the way records.claim sends them (insertThenRead): the two statements in one write, in order.
  async function claimAndRead(key: string, before?: Statement) {
    const claim = { idempotencyKey: key, route: ROUTE, apiClientId: clientId, requestHash: "c".repeat(64) };
    const insert = claimStatement(claim, records.timing);
    const read = claimReadStatement(key, ROUTE);
    const connection = await database.pool.getConnection();
    try {
      if (before) await connection.query(before.sql, before.values);
      const [inserted, rows] = await Promise.allSettled([
        connection.query(insert.sql, insert.values),
        connection.query(read.sql, read.values),
      ]);
      return { inserted, rows: rows.status === "fulfilled" ? (rows.value as { id: bigint }[]) : rows.reason };
    } finally {
      await connection.release();
    }
  }

  test("a fresh claim reads nothing back; a claim that lost to the unique index reads the winner", async () => {
    const key = uniqueKey("claim-read");
    const fresh = await claimAndRead(key);
    assert.equal(fresh.inserted.status, "fulfilled");
    assert.deepEqual(fresh.rows, [], "the INSERT changed a row, so the read returns none");
    const lost = await claimAndRead(key);
    assert.equal(lost.inserted.status, "rejected");
    assert.ok(isDuplicateKeyError(lost.inserted.status === "rejected" && lost.inserted.reason));
    assert.equal(lost.rows.length, 1, "the INSERT failed, so the read returns the record that holds the key");
    const winner = (await recordOf(key, ROUTE))!;
    assert.equal(String(lost.rows[0].id), String(winner.id));
    // A row count left on the connection by its last statement (1 row changed) is not what the read sees.
    const touch = {
      sql: "UPDATE idempotent_requests SET updated_at = UTC_TIMESTAMP(6) WHERE id = ?",
      values: [winner.id],
    };
    const again = await claimAndRead(key, touch);
    assert.equal(again.inserted.status, "rejected");
    assert.equal(again.rows.length, 1, "the failed INSERT's count (-1), not the UPDATE's (1), guards the read");
  });
});

describe("a keyless claim's admission, read with its INSERT", () => {
  const keyless = (admission: Admission) => ({
    idempotencyKey: null,
    route: ROUTE,
    apiClientId: clientId,
    requestHash: "d".repeat(64),
    admission,
  });
  const keylessRecords = () => db.idempotentRequest.count({ where: { route: ROUTE, idempotencyKey: null } });
  // An hour of its own, so that the count this test reads is only its own.
  const refusalHour = new Date(Date.UTC(2001, 0, 1, 0));
  const refusedCount = async () =>
    (
      await db.requestCountBucket.aggregate({
        where: { apiClientId: clientId, bucketStart: refusalHour },
        _sum: { keylessRejected: true },
      })
    )._sum.keylessRejected ?? 0;

  test("admitted: the work runs under the claim, and the read's rows were what admitted it", async () => {
    const seen: unknown[][] = [];
    const admission: Admission = {
      // 1 only on the claim's connection, straight after its INSERT: a read made on its own would see -1.
      read: { sql: "SELECT ? AS marker, CAST(ROW_COUNT() AS CHAR) AS afterInsert", values: ["admit-me"] },
      admits: (rows) => {
        seen.push(rows);
        return true;
      },
      refusalWrites: () => [],
    };
    let runs = 0;
    const outcome = await runIdempotent(
      keyless(admission),
      onlyWork(async () => {
        runs++;
        return DONE;
      }),
    );
    assert.equal(outcome.kind, "fresh");
    assert.equal(runs, 1);
    assert.deepEqual(seen, [[{ marker: "admit-me", afterInsert: "1" }]], "one read, sent with the claim's INSERT");
  });

  test("refused: no work, no record left, and the refusal's writes committed with the withdrawal", async () => {
    const recordsBefore = await keylessRecords();
    const countBefore = await refusedCount();
    const admission: Admission = {
      read: { sql: "SELECT 1 AS required", values: [] },
      admits: () => false,
      refusalWrites: () => [keylessCountStatement(clientId, ROUTE, refusalHour, { refused: true })],
    };
    let runs = 0;
    const outcome = await runIdempotent(
      keyless(admission),
      onlyWork(async () => {
        runs++;
        return DONE;
      }),
    );
    assert.equal(outcome.kind, "refused");
    assert.equal(runs, 0, "nothing asked of the gateway");
    assert.equal(await keylessRecords(), recordsBefore, "the claim was withdrawn");
    assert.equal((await refusedCount()) - countBefore, 1, "counted as refused, once");
  });

  test("withdraw deletes only a record its holder's attempt still holds", async () => {
    // As the holder of attempt 1 (a claimer) would withdraw it.
    const withdrawn = async (seed: Parameters<typeof seedRecord>[0]) =>
      execute(withdrawStatement({ id: (await seedRecord({ route: ROUTE, ...seed })).id, attempt: 1 }));
    assert.equal(await withdrawn({ apiClientId: clientId, key: null, phase: "held" }), 1);
    assert.equal(await withdrawn({ apiClientId: clientId, key: null, phase: "lease_expired" }), 1);
    assert.equal(await withdrawn({ apiClientId: clientId, key: uniqueKey("withdraw"), phase: "held" }), 1, "keyed");
    assert.equal(await withdrawn({ apiClientId: clientId, key: null, phase: "held", attempt: 2 }), 0, "taken over");
    assert.equal(await withdrawn({ apiClientId: clientId, key: null, phase: "released" }), 0, "outcome unknown");
    assert.equal(await withdrawn({ apiClientId: clientId, key: null, phase: "complete" }), 0, "finished");
  });

  test("a withdrawal that matches nothing (taken over) commits nothing of the refusal", async () => {
    const countBefore = await refusedCount();
    const taken = await seedRecord({ route: ROUTE, apiClientId: clientId, key: null, phase: "held", attempt: 2 });
    const refusal = keylessCountStatement(clientId, ROUTE, refusalHour, { refused: true });
    assert.equal(await atomically([withdrawStatement({ id: taken.id, attempt: 1 }), refusal]), false);
    assert.equal(await refusedCount(), countBefore, "counted when the sweeper finishes the record, not here");
    assert.equal((await findById(taken.id))?.attempt, 2, "the record is its taker's");
  });

  test("after a successful INSERT a failed read leaves the row its caller's (rows: null)", async () => {
    const { admission: _, ...claim } = keyless({
      read: { sql: "", values: [] },
      admits: () => true,
      refusalWrites: () => [],
    });
    const insert = claimStatement(claim, records.timing);
    const result = await insertThenRead(insert, { sql: "SELECT no_such_column FROM settings", values: [] });
    assert.ok("insertId" in result && typeof result.insertId === "bigint");
    assert.equal(result.rows, null);
    assert.equal((await db.idempotentRequest.findUnique({ where: { id: result.insertId } }))?.state, "in_progress");
  });
});
