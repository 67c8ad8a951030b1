/**
 * Request ids and the key's lifetime on the wire: a Request-Id on every answer, a replay naming the request it
 * replays, Location on a 201, when a key expires, and expiry at one instant for every path.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  postCharge,
  recordOf,
  startAppInstance,
  uniqueKey,
  waitFor,
} from "./helpers";

const REQUEST_ID = /^req_[0-9a-f]{20}$/;

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("request ids")));
after(closeConnections);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Request-Id", () => {
  test("on every answer: a 201, a 400, a 401, a GET's 404, a tRPC answer; each request its own", async () => {
    const answers = [
      await postCharge({ apiKey, key: uniqueKey() }),
      await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 } }),
      await postCharge({ key: uniqueKey() }),
    ];
    const ids = answers.map((a) => a.headers.get("request-id"));
    const auth = { Authorization: `Bearer ${apiKey}` };
    ids.push((await fetch(`${APP_URL}/api/charges/ch_missing`, { headers: auth })).headers.get("request-id"));
    ids.push((await fetch(`${APP_URL}/api/trpc/auth.me`)).headers.get("request-id"));
    for (const id of ids) assert.match(String(id), REQUEST_ID);
    assert.equal(new Set(ids).size, ids.length);
  });

  test("a replay names the request whose answer it replays, and the key it answered; a 201 has Location", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get("location"), `/api/charges/${first.json.id}`);
    assert.equal(first.headers.get("original-request"), null);
    const replay = await postCharge({ apiKey, key: `"${key}"`, body });
    assert.equal(replay.headers.get("original-request"), first.headers.get("request-id"));
    assert.notEqual(replay.headers.get("request-id"), first.headers.get("request-id"));
    assert.equal(replay.headers.get("idempotency-key"), `"${key}"`);
    const located = await fetch(`${APP_URL}${first.headers.get("location")}`, {
      headers: { Authorization: `Bearer ${apiKey}` },
    });
    assert.equal((await located.json()).id, first.json.id);
  });

  test("stored on the key's timeline: every attempt's answer with its status, code and request id", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1000" });
    const first = postCharge({ apiKey, key, body });
    await pause(300);
    const conflict = await postCharge({ apiKey, key, body });
    assert.equal(conflict.status, 409);
    const done = await first;
    const replay = await postCharge({ apiKey, key, body });
    const record = await recordOf(key, CHARGES_ROUTE);
    assert.equal(record?.phase.name === "complete" && record.phase.response.requestId, done.headers.get("request-id"));
    const answered = await waitFor("three answered events", async () => {
      const ids = [done, conflict, replay].map((r) => r.headers.get("request-id")!);
      const rows = await db.idempotencyEvent.findMany({ where: { kind: "answered", apiRequestId: { in: ids } } });
      return rows.length === 3 && rows;
    });
    const byRequest = new Map(answered.map((e) => [e.apiRequestId, e]));
    assert.equal(byRequest.get(conflict.headers.get("request-id"))?.status, 409);
    assert.equal(byRequest.get(conflict.headers.get("request-id"))?.detail, "in_progress");
    assert.equal(byRequest.get(replay.headers.get("request-id"))?.detail, "replay");
    assert.ok((byRequest.get(done.headers.get("request-id"))?.latencyMs ?? 0) >= 900);
  });
});

describe("Idempotency-Key-Expires", () => {
  test("every keyed answer says when its key expires: a 201, its replay and a 409", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1000" });
    const first = postCharge({ apiKey, key, body });
    await pause(300);
    const conflict = await postCharge({ apiKey, key, body });
    const done = await first;
    const replay = await postCharge({ apiKey, key, body });
    const record = await recordOf(key, CHARGES_ROUTE);
    for (const answer of [done, replay]) {
      const expires = new Date(String(answer.headers.get("idempotency-key-expires")));
      assert.ok(
        Math.abs(expires.getTime() - record!.expiresAt.getTime()) < 2_000,
        answer.headers.get("idempotency-key-expires")!,
      );
    }
    const inFlight = new Date(String(conflict.headers.get("idempotency-key-expires")));
    assert.ok(inFlight.getTime() > Date.now() + 23 * 3_600_000);
  });
});

describe("expiry, one instant", () => {
  const port = Number(process.env.TEST_APP_PORT ?? 3100) + 6;
  let app: Awaited<ReturnType<typeof startAppInstance>>;
  // Keys kept 10 s: the test waits for one to expire.
  before(async () => (app = await startAppInstance(port, { IDEMPOTENCY_KEY_TTL_HOURS: String(1 / 360) })));
  after(async () => app?.stop());

  test("past its expiry a key is a new operation for a POST (memory included) as for a GET", async () => {
    const baseUrl = `http://127.0.0.1:${port}`;
    const key = uniqueKey("expiring");
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body, baseUrl });
    assert.equal(first.status, 201);
    const said = new Date(String(first.headers.get("idempotency-key-expires"))).getTime();
    assert.ok(said - Date.now() < 11_000, "the instance's 10 s, not the default day");
    assert.equal((await postCharge({ apiKey, key, body, baseUrl })).headers.get("idempotent-replay"), "true");
    // The header never promises more than the key lives: the database starts the lifetime when it runs the
    // completion, after the app sent it (seconds later under load), so the stored expiry is the one to wait out.
    const expiresAt = (await recordOf(key, CHARGES_ROUTE))!.expiresAt.getTime();
    assert.ok(
      said <= expiresAt,
      `said ${new Date(said).toISOString()}, kept until ${new Date(expiresAt).toISOString()}`,
    );
    await pause(expiresAt - Date.now() + 200);
    const auth = { Authorization: `Bearer ${apiKey}` };
    const lookup = await fetch(`${baseUrl}/api/charges?idempotency_key=${key}`, { headers: auth });
    assert.equal(lookup.status, 404);
    const again = await postCharge({ apiKey, key, body, baseUrl });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replay"), null, "not the expired answer from memory");
    assert.notEqual(again.json.id, first.json.id);
  });
});
