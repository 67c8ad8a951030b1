/**
 * What support reads in the request log (issue 40): why the sweeper abandoned each record, as a column and a
 * filter; and a key pasted the way the SDK sends it in its header (a quoted structured-field string) found like
 * the bare key, whole or in part.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import type { SessionUser } from "~/server/auth/session";
import { abandonedBody } from "~/server/http/abandonedAnswer";
import { serializeKey } from "@charges/client/idempotencyProtocol";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge, seedRecord } from "./helpers";

after(closeConnections);

async function support() {
  const u = await db.staffUser.create({
    data: { email: `search-${randomUUID()}@example.com`, name: "Support", role: "support", passwordHash: "x" },
  });
  const user: SessionUser = { id: u.id, email: u.email, name: u.name, role: u.role };
  return createCaller(createInnerTRPCContext({ user }));
}

describe("the request log for support", () => {
  test("abandoned records say why, and are filtered by it", async () => {
    const { id: apiClientId } = await newApiClient("abandoned reasons");
    const abandoned = (body: string) =>
      seedRecord({
        apiClientId,
        phase: "complete",
        key: null,
        finishedBy: "abandoned",
        response: { status: 500, body },
      });
    const noTrace = await abandoned(abandonedBody({ kind: "no_trace" }));
    const refused = await abandoned(abandonedBody({ kind: "refused", code: "request_expired" }));
    // A decline: a stored 201 would have to name a charge row (the run's closing ledger check).
    await seedRecord({ apiClientId, phase: "complete", key: null, response: { status: 402, body: "{}" } });
    const s = await support();

    const all = await s.requests.list({ apiClientId });
    const because = Object.fromEntries(all.items.map((r) => [r.id, r.phase.because]));
    assert.equal(Object.keys(because).length, 3);
    assert.equal(because[String(noTrace.id)], "no trace at the gateway");
    assert.equal(because[String(refused.id)], "the gateway refused it (request_expired)");
    assert.equal(Object.values(because).filter((b) => b === null).length, 1, "a record not abandoned says nothing");
    const ids = async (abandonedBy: "no_trace" | "refused") =>
      (await s.requests.list({ apiClientId, abandoned: abandonedBy })).items.map((r) => r.id);
    assert.deepEqual(await ids("no_trace"), [String(noTrace.id)]);
    assert.deepEqual(await ids("refused"), [String(refused.id)]);
    assert.equal((await s.requests.count({ apiClientId, abandoned: "refused" }))?.count, 1);
  });

  test("a key pasted as the SDK sends it, quoted, is found like the bare key", async () => {
    const { apiKey } = await newApiClient("quoted keys");
    const key = `quoted-${randomUUID()}`;
    const res = await postCharge({ apiKey, key: serializeKey(key), body: chargeBody() });
    assert.equal(res.status, 201, res.text);
    const s = await support();
    const quoted = serializeKey(key);
    assert.match(quoted, /^".*"$/, "the SDK's header form is a quoted string");
    const [landed] = await s.requests.resolve({ q: quoted });
    assert.equal(landed?.kind, "idempotency key");
    assert.deepEqual(await s.requests.resolve({ q: quoted }), await s.requests.resolve({ q: key }));
    // Part of it, as someone copies the start of a header value.
    const part = await s.requests.search({ prefix: quoted.slice(0, 20) });
    assert.deepEqual(
      part.requests.map((r) => r.idempotencyKey),
      [key],
    );
  });
});
