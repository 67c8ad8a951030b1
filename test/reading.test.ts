/** Reading charges back, and the answers of unknown paths and methods. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { slotsBetween, type PoolSlot } from "~/server/db/poolUsage";
import {
  APP_URL,
  assertError,
  closeConnections,
  newApiClient,
  postCharge,
  uniqueKey,
  withMetricsCredential,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("reading")));
after(closeConnections);

describe("reading charges", () => {
  test("GET /api/charges/:id for its owner; 404 for anyone else", async () => {
    const created = await postCharge({ apiKey, key: uniqueKey() });
    const mine = await fetch(`${APP_URL}/api/charges/${created.json.id}`, {
      headers: { Authorization: `Bearer ${apiKey}` },
    });
    assert.equal(mine.status, 200);
    assert.deepEqual(await mine.json(), created.json);
    const other = await newApiClient("reader");
    const theirs = await fetch(`${APP_URL}/api/charges/${created.json.id}`, {
      headers: { Authorization: `Bearer ${other.apiKey}` },
    });
    assertError({ status: theirs.status, json: await theirs.json(), text: "" }, 404, "not_found");
  });
  test("unknown paths and methods answer in the error format", async () => {
    const res = await fetch(`${APP_URL}/api/nothing-here`);
    assertError({ status: res.status, json: await res.json(), text: "" }, 404, "not_found");
    const put = await fetch(`${APP_URL}/api/charges`, { method: "PUT" });
    assertError({ status: put.status, json: await put.json(), text: "" }, 405, "method_not_allowed");
  });
  test("GET /api/health says up or down to anyone, and the pool's recent use to the metrics credential", async () => {
    const stranger = await fetch(`${APP_URL}/api/health`);
    assert.equal(stranger.status, 200);
    assert.deepEqual(await stranger.json(), { status: "ok" }, "no figures without a credential");
    const wrong = await fetch(`${APP_URL}/api/health`, { headers: { Authorization: "Bearer not-the-token" } });
    assert.deepEqual(await wrong.json(), { status: "ok" });
    const sent = Date.now();
    const res = await fetch(`${APP_URL}/api/health`, withMetricsCredential);
    assert.equal(res.status, 200);
    const health = await res.json();
    assert.equal(health.database, "ok");
    // Its own SELECT 1 took a connection in one of the 100 ms slots the request spanned (on a busy machine the
    // release may fall in a later slot than the acquire, so not necessarily the last one).
    const during: PoolSlot[] = slotsBetween(health.pool.recent, sent, Date.now() + 1);
    assert.ok(
      during.some((slot) => slot.acquired >= 1 && slot.maxActive >= 1),
      JSON.stringify(health.pool.recent),
    );
    assert.ok(during.every((slot) => slot.maxActive <= health.pool.limit && slot.heldMs >= 0));
  });
});
