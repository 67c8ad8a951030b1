import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { hourBucket } from "~/server/rollout/counters";
import { staffContext, type AuditContext } from "~/server/audit/audit";
import { getIdempotencyMode, setIdempotencyMode } from "~/server/rollout/mode";
import { chargeBody, closeConnections, db, localCharges, newApiClient, postCharge, uniqueKey, waitFor } from "./helpers";

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

const bucket = () =>
  db.requestCountBucket.findUniqueOrThrow({ where: { apiClientId_bucketStart: { apiClientId: clientId, bucketStart: hourBucket(new Date()) } } });

describe("rollout of the Idempotency-Key header", () => {
  test("optional mode: keyless requests are served, and counted apart from keyed ones", async () => {
    assert.equal(await getIdempotencyMode(), "optional");
    const keyless = await Promise.all([1, 2, 3].map(() => postCharge({ apiKey, body: chargeBody() })));
    assert.deepEqual(keyless.map((r) => r.status), [201, 201, 201]);
    await postCharge({ apiKey, key: uniqueKey() });
    const counts = await bucket();
    assert.equal(counts.keyless, 3, "keyless requests are counted before they are answered");
    assert.ok(counts.lastKeylessAt);
    // Keyed requests are summed in memory and written once a second.
    await waitFor("the keyed request to be counted", async () => (await bucket()).keyed === 1);
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
    const res = await postCharge({ apiKey, body });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, "idempotency_key_required");
    assert.match(res.headers.get("link") ?? "", /^<http[^>]+\/docs#section\/Errors\/idempotency_key_required>; rel="describedby"/);
    assert.equal((await localCharges(body.customer_id)).length, 0);
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
