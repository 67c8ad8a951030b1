/**
 * Events (issue 41, item 1): every finished money operation writes its event in the transaction that stores its
 * answer, whoever finishes it; GET /api/events lists a client's own, newest first, by cursor, with filters.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { atomically } from "~/server/db";
import { withCompletionWrites } from "~/server/operations/completion";
import { chargeCompletion } from "~/server/charges/chargeRows";
import { completeStatement, timing } from "~/server/idempotency/records";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  postCharge,
  postRefund,
  seedRecord,
  uniqueKey,
} from "./helpers";

let apiKey: string;
let clientId: number;
let other: { apiKey: string; id: number };
before(async () => {
  ({ apiKey, id: clientId } = await newApiClient("events"));
  other = await newApiClient("events, another client");
});
after(closeConnections);

const getJson = async (path: string, key = apiKey) => {
  const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), text };
};

/** The events of one operation, as the API lists them (newest first). */
async function eventsOfRequest(requestId: bigint | string) {
  const rows = await db.event.findMany({ where: { requestId: BigInt(requestId) }, orderBy: { seq: "asc" } });
  return rows.map((r) => ({ ...r, object: JSON.parse(r.data) }));
}

describe("events written with the money", () => {
  test("charge.succeeded: the charge as the API shows it, the key and the request; a replay adds none", async () => {
    const key = uniqueKey("evt");
    const body = chargeBody();
    const made = await postCharge({ apiKey, key, body });
    assert.equal(made.status, 201, made.text);
    const record = await db.idempotentRequest.findFirstOrThrow({
      where: { apiClientId: clientId, route: "POST /api/charges" },
      orderBy: { id: "desc" },
    });
    const events = await eventsOfRequest(record.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ["charge.succeeded"],
    );
    assert.deepEqual(events[0]!.object, made.json, "the object is the 201's charge");
    assert.equal(events[0]!.chargeId, made.json.id);
    const listed = await getJson(`/api/events/${events[0]!.id}`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.request, { id: String(record.id), idempotency_key: key });
    assert.deepEqual(listed.json.data.object, made.json);
    assert.equal(listed.json.object, "event");
    const replay = await postCharge({ apiKey, key, body });
    assert.equal(replay.headers.get("idempotent-replay"), "true");
    assert.equal((await eventsOfRequest(record.id)).length, 1, "one event per operation");
  });

  test("charge.failed for a decline, with the failed charge", async () => {
    const declined = await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) });
    assert.equal(declined.status, 402, declined.text);
    const events = await db.event.findMany({ where: { chargeId: declined.json.error.charge } });
    assert.deepEqual(
      events.map((e) => e.type),
      ["charge.failed"],
    );
    const object = JSON.parse(events[0]!.data);
    assert.equal(object.status, "failed");
    assert.equal(object.failure_code, declined.json.error.decline_code, "the gateway's code, as the 402 said it");
  });

  test("refund.succeeded: the refund as the API shows it, on its charge's events", async () => {
    const charge = await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ amount_cents: 1000 }) });
    const refund = await postRefund({ apiKey, key: uniqueKey(), body: { charge: charge.json.id, amount_cents: 400 } });
    assert.equal(refund.status, 201, refund.text);
    const events = await db.event.findMany({ where: { chargeId: charge.json.id }, orderBy: { seq: "asc" } });
    assert.deepEqual(
      events.map((e) => e.type),
      ["charge.succeeded", "refund.succeeded"],
    );
    assert.deepEqual(JSON.parse(events[1]!.data), refund.json);
    assert.ok(events[0]!.seq < events[1]!.seq, "the sequence follows the order they happened in");
  });

  test("a keyless charge's event has no key", async () => {
    const made = await postCharge({ apiKey, body: chargeBody() });
    assert.equal(made.status, 201, made.text);
    const [event] = await db.event.findMany({ where: { chargeId: made.json.id } });
    assert.equal(event!.idempotencyKey, null);
    assert.ok(event!.requestId, "the request it came from");
  });

  test("operation.written_off when the sweeper finds nothing was made", async () => {
    const record = await seedRecord({
      apiClientId: clientId,
      phase: "released",
      body: chargeBody(),
      ageMs: 10 * 60_000,
    });
    await reapAbandoned({ olderThanMs: 0 });
    const events = await eventsOfRequest(record.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ["operation.written_off"],
    );
    assert.equal(events[0]!.object.error.code, "request_abandoned");
    assert.equal(events[0]!.object.request_id, String(record.id));
  });

  test("a completion that does not commit leaves no event", async () => {
    const record = await seedRecord({
      apiClientId: clientId,
      phase: "lease_expired",
      body: chargeBody(),
      ageMs: 1_000,
    });
    const gatewayCharge = {
      id: `gw_never_${uniqueKey()}`.slice(0, 60),
      amountCents: 100,
      currency: "usd",
      status: "succeeded" as const,
      customerId: null,
      declineCode: null,
      message: null,
    };
    const result = withCompletionWrites(record, chargeCompletion(record, gatewayCharge, uniqueKey("gk")));
    assert.ok(result.kind === "complete");
    // The fence and the writes, then one that lands nothing: the transaction rolls back, the event with it.
    const nothing = { sql: "UPDATE idempotent_requests SET attempt = attempt WHERE id = -1", values: [] };
    const committed = await atomically([
      completeStatement(record, result.response, "request", timing),
      ...result.writes,
      nothing,
    ]);
    assert.equal(committed, false);
    assert.equal((await eventsOfRequest(record.id)).length, 0, "no event without its change");
    assert.equal(await db.charge.count({ where: { idempotentRequestId: record.id } }), 0);
    // Left for the run's closing sweep, which writes it off (nothing was charged at the gateway).
  });
});

describe("GET /api/events", () => {
  test("a client's own events, newest first, paged both ways, filtered by type and time", async () => {
    const client = await newApiClient("events list");
    const charges: string[] = [];
    for (let i = 0; i < 5; i++) {
      const card = i === 2 ? "tok_declined" : "tok_visa";
      const res = await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody({ card_token: card }) });
      charges.push(res.json.id ?? res.json.error.charge);
    }
    const all = await getJson("/api/events?limit=100", client.apiKey);
    assert.equal(all.status, 200, all.text);
    assert.equal(all.json.object, "list");
    assert.equal(all.json.url, "/api/events");
    assert.equal(all.json.has_more, false);
    assert.deepEqual(
      all.json.data.map((e: any) => e.data.object.id),
      [...charges].reverse(),
      "newest first",
    );
    const sequences = all.json.data.map((e: any) => e.sequence);
    assert.deepEqual(
      sequences,
      [...sequences].sort((a: number, b: number) => b - a),
    );

    const first = await getJson("/api/events?limit=2", client.apiKey);
    assert.equal(first.json.has_more, true);
    const second = await getJson(`/api/events?limit=2&starting_after=${first.json.data[1].id}`, client.apiKey);
    const third = await getJson(`/api/events?limit=2&starting_after=${second.json.data[1].id}`, client.apiKey);
    assert.equal(third.json.has_more, false);
    const paged = [...first.json.data, ...second.json.data, ...third.json.data].map((e: any) => e.id);
    assert.deepEqual(
      paged,
      all.json.data.map((e: any) => e.id),
      "every event once, in order",
    );
    const back = await getJson(`/api/events?limit=2&ending_before=${third.json.data[0].id}`, client.apiKey);
    assert.deepEqual(
      back.json.data.map((e: any) => e.id),
      second.json.data.map((e: any) => e.id),
    );
    assert.equal(back.json.has_more, true);

    const failed = await getJson("/api/events?type=charge.failed", client.apiKey);
    assert.deepEqual(
      failed.json.data.map((e: any) => e.data.object.id),
      [charges[2]],
    );
    const family = await getJson("/api/events?type=charge.*&limit=100", client.apiKey);
    assert.equal(family.json.data.length, 5);
    const future = new Date(Date.now() + 60_000).toISOString();
    const none = await getJson(`/api/events?created[gte]=${encodeURIComponent(future)}`, client.apiKey);
    assert.deepEqual(none.json.data, []);
    const past = Math.floor(Date.now() / 1000) - 600;
    const recent = await getJson(`/api/events?created[gte]=${past}&limit=100`, client.apiKey);
    assert.equal(recent.json.data.length, 5);
  });

  test("another client's events are never shown, nor usable as a cursor", async () => {
    const mine = await getJson("/api/events?limit=100");
    const theirs = await getJson("/api/events?limit=100", other.apiKey);
    const mineIds = new Set(mine.json.data.map((e: any) => e.id));
    assert.ok(mine.json.data.length > 0);
    assert.ok(theirs.json.data.every((e: any) => !mineIds.has(e.id)));
    const cursor = await getJson(`/api/events?starting_after=${mine.json.data[0].id}`, other.apiKey);
    assertError(cursor, 400, "invalid_request");
    const one = await getJson(`/api/events/${mine.json.data[0].id}`, other.apiKey);
    assertError(one, 404, "not_found");
  });

  test("bad parameters are refused, naming the parameter", async () => {
    for (const query of [
      "limit=0",
      "limit=101",
      "type=charge.nope",
      "created[gte]=yesterday",
      "starting_after=a&ending_before=b",
    ]) {
      const res = await getJson(`/api/events?${query}`);
      assertError(res, 400, "invalid_request");
      assert.ok(res.json.error.fields, res.text);
    }
  });
});
