import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hourBucket } from "~/server/rollout/counters";
import { staffContext, type AuditContext } from "~/server/audit/audit";
import { getIdempotencyMode, setIdempotencyMode } from "~/server/rollout/mode";
import {
  chargeBody,
  closeConnections,
  db,
  localCharges,
  newApiClient,
  postCharge,
  seedRecord,
  sweepUntil,
  uniqueKey,
  waitFor,
} from "./helpers";

let apiKey: string;
let clientId: number;
let staffId: number;
let engineer: AuditContext;
before(async () => {
  ({ apiKey, id: clientId } = await newApiClient("rollout"));
  const user = await db.staffUser.create({
    data: { email: `rollout-${Date.now()}@example.com`, name: "Rollout", role: "engineer", passwordHash: "x" },
  });
  staffId = user.id;
  engineer = staffContext(user);
});
after(async () => {
  if ((await getIdempotencyMode()) === "required") await setIdempotencyMode("optional", engineer, "test clean-up");
  await closeConnections();
});

const keylessRecords = () => db.idempotentRequest.count({ where: { apiClientId: clientId, idempotencyKey: null } });

/** The client's counts for an hour (this one by default), summed over the rows the hour is spread on. */
async function bucket(at = new Date()) {
  const { _sum, _max } = await db.requestCountBucket.aggregate({
    where: { apiClientId: clientId, bucketStart: hourBucket(at) },
    _sum: { keyed: true, keyless: true, keylessRejected: true },
    _max: { lastKeylessAt: true },
  });
  return {
    keyed: _sum.keyed ?? 0,
    keyless: _sum.keyless ?? 0,
    keylessRejected: _sum.keylessRejected ?? 0,
    lastKeylessAt: _max.lastKeylessAt,
  };
}

describe("rollout of the Idempotency-Key header", () => {
  test("optional mode: keyless requests are served, and counted apart from keyed ones", async () => {
    assert.equal(await getIdempotencyMode(), "optional");
    const keyless = await Promise.all([1, 2, 3].map(() => postCharge({ apiKey, body: chargeBody() })));
    assert.deepEqual(
      keyless.map((r) => r.status),
      [201, 201, 201],
    );
    await postCharge({ apiKey, key: uniqueKey() });
    const counts = await bucket();
    assert.equal(counts.keyless, 3, "keyless requests are counted before they are answered");
    assert.ok(counts.lastKeylessAt);
    // Keyed requests are summed in memory and written once a second.
    await waitFor("the keyed request to be counted", async () => (await bucket()).keyed === 1);
  });

  test("keyless requests at once are each counted exactly once, on several rows (no single hot row)", async () => {
    const before = (await bucket()).keyless;
    const answers = await Promise.all(Array.from({ length: 40 }, () => postCharge({ apiKey, body: chargeBody() })));
    assert.ok(answers.every((r) => r.status === 201));
    assert.equal((await bucket()).keyless - before, 40, "every keyless request counted once, before it was answered");
    const thisHour = { apiClientId: clientId, bucketStart: hourBucket(new Date()) };
    const rows = await db.requestCountBucket.count({ where: thisHour });
    assert.ok(rows > 1, `the hour is spread over several rows (${rows})`);
  });

  test("a keyless request its process never finished is counted when the sweeper finishes it", async () => {
    const record = await seedRecord({ apiClientId: clientId, phase: "lease_expired", body: chargeBody(), key: null });
    const before = (await bucket(record.createdAt)).keyless;
    await sweepUntil("the keyless record to be finished", async () => {
      const current = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } });
      return current.state === "complete";
    });
    assert.equal((await bucket(record.createdAt)).keyless - before, 1, "counted once, in the hour it was made");
  });

  test("a keyless request answered without a record (invalid body) is counted too", async () => {
    const before = (await bucket()).keyless;
    const res = await postCharge({ apiKey, body: { amount_cents: -1, currency: "usd", card_token: "tok_visa" } });
    assert.equal(res.status, 400);
    assert.equal((await bucket()).keyless - before, 1);
  });

  test("optional mode: a keyless retry is a second charge (why the header matters)", async () => {
    const body = chargeBody();
    await postCharge({ apiKey, body });
    await postCharge({ apiKey, body });
    assert.equal((await localCharges(body.customer_id)).length, 2);
  });

  test("required mode: keyless -> 400 idempotency_key_required, nothing charged; keyed still works", async () => {
    await setIdempotencyMode("required", engineer, "rollout test");
    const body = chargeBody();
    const before = await bucket();
    const recordsBefore = await keylessRecords();
    const res = await postCharge({ apiKey, body });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, "idempotency_key_required");
    const after = await bucket();
    assert.equal(after.keylessRejected - before.keylessRejected, 1, "a refused keyless request counts as refused");
    assert.equal(after.keyless - before.keyless, 0, "...and not as an accepted one");
    assert.equal(after.lastKeylessAt?.getTime(), before.lastKeylessAt?.getTime(), "nor as the last accepted one");
    // Its claim (the mode is read with it) was withdrawn: nothing of it is left to sweep or to show.
    assert.equal(await keylessRecords(), recordsBefore, "no record left of a refused request");
    assert.match(
      res.headers.get("link") ?? "",
      /^<http[^>]+\/docs#section\/Errors\/idempotency_key_required>; rel="describedby"/,
    );
    assert.equal((await localCharges(body.customer_id)).length, 0);
    // The header's error comes before the body's, as for a malformed key: an invalid keyless request is told
    // about its key (and counted as refused), not about its fields.
    const { keylessRejected } = await bucket();
    const invalid = await postCharge({ apiKey, body: { ...body, amount_cents: -1 } });
    assert.equal(invalid.json.error.code, "idempotency_key_required");
    assert.equal((await bucket()).keylessRejected - keylessRejected, 1);
    assert.equal((await postCharge({ apiKey, key: uniqueKey(), body })).status, 201);
    const log = await db.auditEvent.findFirstOrThrow({
      where: { action: "mode.changed", actorStaffId: staffId },
      orderBy: { id: "desc" },
    });
    assert.deepEqual(JSON.parse(log.details!), { from: "optional", to: "required", reason: "rollout test" });
  });

  test("back to optional: keyless accepted again", async () => {
    await setIdempotencyMode("optional", engineer, "rollout test");
    assert.equal((await postCharge({ apiKey, body: chargeBody() })).status, 201);
  });
});
