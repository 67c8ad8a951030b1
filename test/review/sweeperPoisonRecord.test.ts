/**
 * FINDING (robustness): one record in an impossible state stops the sweeper
 * from finishing any record at all.
 *
 * findUnfinished decodes the whole batch (oldest first) with decodeRecord, which
 * throws ImpossibleRecordError for a row no transition could have produced (a
 * hand edit during an incident, a bad migration, a restore). The throw escapes
 * reapAbandoned before its loop, so every sweep fails the same way, and since
 * the bad row is the oldest it is in every batch: released records (money that
 * may have moved) are never finished, records stay in progress forever, and
 * the only trace is "sweep failed" in the sweeper's log.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import { chargeBody, closeConnections, db, newApiClient, recordOf, seedRecord, uniqueKey } from "../helpers";

let clientId: number;
before(async () => ({ id: clientId } = await newApiClient("review poison")));
after(closeConnections);

describe("a record in an impossible state", () => {
  test("does not stop the sweeper from finishing the others", async () => {
    const bad = await seedRecord({ apiClientId: clientId, phase: "released", ageMs: 3_600_000 });
    // In progress with a stored outcome: the lifecycle calls this impossible.
    await db.idempotentRequest.update({ where: { id: bad.id }, data: { finishedBy: "abandoned" } });
    const key = uniqueKey("poisoned");
    await seedRecord({ apiClientId: clientId, phase: "released", key, body: chargeBody(), ageMs: 600_000 });
    try {
      const swept = await reapAbandoned({ olderThanMs: 0 }).then(
        (r) => JSON.stringify(r),
        (e: Error) => `threw ${e.name}: ${e.message}`,
      );
      const phase = (await recordOf(key))?.phase.name;
      assert.equal(phase, "complete", `the good record was not finished (sweep: ${swept})`);
    } finally {
      await db.idempotentRequest.delete({ where: { id: bad.id } });
      await reapAbandoned({ olderThanMs: 0 }).catch(() => {});
    }
  });
});
