/**
 * Review of f3be6a1 (a keyed refund refused by its hold, in its claim's transaction): when the claim meets its
 * charge locked elsewhere (another refund's hold or completion, a ledger job), the claim is made alone and the
 * work holds later. A refusal found there is stored as the operation's answer, so the key is burnt: invariant 3
 * says a refusal stores nothing and a retry with a corrected body succeeds. The keyed precheck that used to refuse
 * these before any claim is skipped now (submitOperation.checkBeforeClaim, claimDecides). Fixed: the work's
 * refusal declines, and the record, under which no gateway call was made, is withdrawn (WorkResult `declined`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import {
  type ApiResponse,
  closeConnections,
  db,
  newApiClient,
  newCharge,
  postRefund,
  recordsWithKey,
  refundedOf,
  uniqueKey,
} from "../helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("refusal under lock")));
after(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `send()` while another connection holds the charge's row lock, and lets go after a second. */
async function whileChargeLocked(charge: string, send: () => Promise<ApiResponse>): Promise<ApiResponse> {
  const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
  let answer: Promise<ApiResponse> | undefined;
  try {
    await outside.query("BEGIN");
    await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
    answer = send();
    await sleep(1_000);
  } finally {
    await outside.query("ROLLBACK").catch(() => {});
    await outside.end();
  }
  return answer!;
}

describe("a keyed refund refused after its claim met the charge locked", () => {
  test("amount over what is left: 400, nothing stored, and the corrected retry under the key is a 201", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const key = uniqueKey("over-locked");
    const first = await whileChargeLocked(charge, () =>
      postRefund({ apiKey, key, body: { charge, amount_cents: 5000 } }),
    );
    const stored = await recordsWithKey(key);
    const retry = await postRefund({ apiKey, key, body: { charge, amount_cents: 100 } });
    const t = await refundedOf(charge);
    assert.deepEqual(
      {
        first: [first.status, first.json?.error?.code],
        stored,
        retry: [retry.status, retry.json?.error?.code ?? null],
        refunded: t.refunded,
        held: t.held,
      },
      { first: [400, "invalid_request"], stored: 0, retry: [201, null], refunded: 100, held: 0 },
      `first: ${first.text}\nretry: ${retry.text}`,
    );
  });

  test("another client's charge: 404 stores nothing, and the retry naming its own charge is a 201", async () => {
    const others = await newApiClient("refusal under lock, owner");
    const foreign = await newCharge(others.apiKey, { amount_cents: 1000 });
    const own = await newCharge(apiKey, { amount_cents: 1000 });
    const key = uniqueKey("foreign-locked");
    const first = await whileChargeLocked(foreign, () =>
      postRefund({ apiKey, key, body: { charge: foreign, amount_cents: 100 } }),
    );
    const stored = await recordsWithKey(key);
    const retry = await postRefund({ apiKey, key, body: { charge: own, amount_cents: 100 } });
    assert.deepEqual(
      { first: first.status, stored, retry: [retry.status, retry.json?.error?.code ?? null] },
      { first: 404, stored: 0, retry: [201, null] },
      `first: ${first.text}\nretry: ${retry.text}`,
    );
  });
});

describe("keyless refunds that pass the precheck and then lose the race for what was left", () => {
  test("two of 600 on 1000 behind the charge's lock: one 201, one refused, no record of it, both counted", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const keyless = () => db.idempotentRequest.count({ where: { apiClientId: clientId, idempotencyKey: null } });
    const counted = async () =>
      (await db.requestCountBucket.aggregate({ where: { apiClientId: clientId }, _sum: { keyless: true } }))._sum
        .keyless ?? 0;
    const [recordsBefore, countBefore] = [await keyless(), await counted()];
    const body = { charge, amount_cents: 600 };
    let second: Promise<ApiResponse> | undefined;
    const first = await whileChargeLocked(charge, async () => {
      second = postRefund({ apiKey, body });
      return postRefund({ apiKey, body });
    });
    const answers = [first, await second!].map((a) => `${a.status} ${a.json?.error?.code ?? "refund"}`).sort();
    // Refused while the other still holds its 600 (in flight: told to retry), or once it is refunded (400).
    assert.equal(answers[0], "201 refund", answers.join(", "));
    assert.ok(["400 invalid_request", "409 refund_in_progress"].includes(answers[1]!), answers.join(", "));
    assert.equal((await keyless()) - recordsBefore, 1, "only the refund's record is left");
    assert.equal((await counted()) - countBefore, 2, "both counted as accepted keyless requests");
    const t = await refundedOf(charge);
    assert.deepEqual([t.refunded, t.held], [600, 0]);
  });
});

describe("refunds racing on one charge with different keys, no lock taken by the test", () => {
  test("5 rounds of 40 keyed refunds of 100 on a charge of 1000: every refusal leaves no record", async () => {
    const stored: string[] = [];
    for (let round = 0; round < 5; round++) {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const keys = Array.from({ length: 40 }, (_, i) => uniqueKey(`race-${round}-${i}`));
      const body = { charge, amount_cents: 100 };
      const answers = await Promise.all(keys.map((key) => postRefund({ apiKey, key, body })));
      for (const [i, key] of keys.entries()) {
        const a = answers[i]!;
        if (a.status !== 201 && (await recordsWithKey(key)) > 0) stored.push(`${a.status} ${a.json?.error?.code}`);
      }
      assert.equal((await refundedOf(charge)).refunded, 1000);
    }
    assert.deepEqual(stored, [], "refusals stored as their operation's answer (their keys are burnt)");
  });
});
