/**
 * The dashboard's tRPC procedures against the real database and the real
 * server (requests go over HTTP to the app, whose key events reach the table
 * within a second).
 */
import assert from "node:assert/strict";
import { automaticGranularity } from "~/server/rollout/granularity";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import type { SessionUser } from "~/server/auth/session";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge, recordOf, uniqueKey, waitFor } from "./helpers";

let support: SessionUser;
let engineer: SessionUser;
let client: { id: number; apiKey: string };

async function staff(role: "support" | "engineer"): Promise<SessionUser> {
  const u = await db.staffUser.create({
    data: { email: `${role}-${uniqueKey()}@example.com`, name: `T ${role}`, role, passwordHash: "x" },
  });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

const as = (user: SessionUser | null) => createCaller(createInnerTRPCContext({ user }));

async function rejectsWith(promise: Promise<unknown>, code: TRPCError["code"]) {
  await assert.rejects(promise, (e: unknown) => e instanceof TRPCError && e.code === code);
}

/** Back to optional whatever a test left (a switch to the current mode is refused, so ask first). */
async function optionalAgain() {
  const status = await as(engineer).rollout.status();
  if (status.mode === "required") await as(engineer).rollout.setMode({ mode: "optional", reason: "test clean-up" });
}

before(async () => {
  support = await staff("support");
  engineer = await staff("engineer");
  client = await newApiClient("trpc");
});
after(async () => {
  await optionalAgain();
  await closeConnections();
});

describe("tRPC procedures", () => {
  test("every procedure refuses anonymous callers with UNAUTHORIZED", async () => {
    const anon = as(null);
    await rejectsWith(anon.requests.list({}), "UNAUTHORIZED");
    await rejectsWith(anon.requests.search({ prefix: "x" }), "UNAUTHORIZED");
    await rejectsWith(anon.customers.charges({ customerId: "x" }), "UNAUTHORIZED");
    await rejectsWith(anon.rollout.status(), "UNAUTHORIZED");
    await rejectsWith(anon.rollout.setMode({ mode: "required", reason: "no one" }), "UNAUTHORIZED");
    await rejectsWith(anon.sweep.status(), "UNAUTHORIZED");
  });

  test("support reads, cannot switch (FORBIDDEN); an engineer switches with a reason, audited, not twice", async () => {
    await rejectsWith(as(support).rollout.setMode({ mode: "required", reason: "support tries" }), "FORBIDDEN");
    await rejectsWith(
      as(support).rollout.setClientRequired({ clientId: client.id, required: true, reason: "support tries" }),
      "FORBIDDEN",
    );
    await rejectsWith(as(engineer).rollout.setMode({ mode: "required", reason: "" }), "BAD_REQUEST");
    const entry = await as(engineer).rollout.setMode({ mode: "required", reason: "keyless traffic is zero" });
    assert.deepEqual(entry, { fromMode: "optional", toMode: "required" });
    await rejectsWith(as(engineer).rollout.setMode({ mode: "required", reason: "again" }), "CONFLICT");
    const status = await as(support).rollout.status();
    assert.equal(status.mode, "required");
    assert.equal(status.safeToEnforce, false, "after the switch it is enforced, not 'safe to enforce'");
    const changes = await as(support).rollout.modeChanges({});
    assert.equal(changes.items[0]!.actor, engineer.email);
    assert.equal(changes.items[0]!.reason, "keyless traffic is zero");
    await as(engineer).rollout.setMode({ mode: "optional", reason: "back" });
  });

  test("request log: filters by client, phase, status and customer, pages by cursor, counts", async () => {
    const mine = await newApiClient("trpc-log");
    const customer = `cus_${uniqueKey().slice(4, 20)}`;
    for (let i = 0; i < 3; i++)
      await postCharge({ apiKey: mine.apiKey, key: uniqueKey("log"), body: chargeBody({ customer_id: customer }) });
    await postCharge({ apiKey: mine.apiKey, key: uniqueKey("log"), body: chargeBody({ card_token: "tok_declined" }) });
    const s = as(support);
    const first = await s.requests.list({ apiClientId: mine.id, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.nextCursor);
    const second = await s.requests.list({ apiClientId: mine.id, limit: 2, cursor: first.nextCursor });
    assert.equal(second.items.length, 2);
    assert.equal(second.nextCursor, null);
    const all = [...first.items, ...second.items];
    assert.equal(new Set(all.map((i) => i.id)).size, 4);
    assert.ok(all.every((i) => i.apiClient.id === mine.id));
    assert.ok(all[0]!.createdAt >= all[3]!.createdAt, "newest first");
    assert.deepEqual(await s.requests.count({ apiClientId: mine.id }), { count: 4, capped: false });
    assert.equal((await s.requests.list({ apiClientId: mine.id, status: "402" })).items.length, 1);
    assert.equal((await s.requests.list({ customerId: customer })).items.length, 3);
    const complete = await s.requests.list({ apiClientId: mine.id, phase: "request" });
    assert.equal(complete.items.length, 4);
    assert.equal(complete.items[0]!.phase.label, "Complete", "worded by the lifecycle module");
    assert.equal((await s.requests.list({ apiClientId: mine.id, phase: "in_progress" })).items.length, 0);
    assert.equal(
      (await s.requests.list({ apiClientId: mine.id, since: new Date(Date.now() + 3_600_000) })).items.length,
      0,
    );
  });

  test("prefix search finds keys, charge ids and customers", async () => {
    const key = uniqueKey("prefix");
    const body = chargeBody();
    const res = await postCharge({ apiKey: client.apiKey, key, body });
    const s = as(support);
    assert.ok((await s.requests.search({ prefix: key.slice(0, 12) })).requests.some((r) => r.idempotencyKey === key));
    assert.ok((await s.requests.search({ prefix: key })).requests.some((r) => r.idempotencyKey === key));
    assert.ok(
      (await s.requests.search({ prefix: res.json.id.slice(0, 12) })).charges.some((c) => c.id === res.json.id),
    );
    assert.ok(
      (await s.requests.search({ prefix: body.customer_id.slice(0, 10) })).customers.includes(body.customer_id),
    );
  });

  test("request page: what was asked (no card token), the answer, and the key's timeline", async () => {
    const key = uniqueKey("timeline");
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey: client.apiKey, key, body });
    await waitFor("the claim", async () => (await recordOf(key)) !== undefined);
    const during = await postCharge({ apiKey: client.apiKey, key, body });
    assert.equal(during.status, 409);
    assert.equal((await first).status, 201);
    assert.equal((await postCharge({ apiKey: client.apiKey, key, body })).headers.get("idempotent-replay"), "true");
    const record = (await recordOf(key))!;
    const s = as(support);
    const detail = await waitFor("the key's events", async () => {
      const d = await s.requests.byId({ id: String(record.id) });
      const kinds = d.timeline.map((e) => e.kind);
      return ["claimed", "in_progress", "completed", "replayed"].every((k) => kinds.includes(k as never)) && d;
    });
    assert.deepEqual(detail.request.fields, { amount_cents: 1999, currency: "usd", customer_id: body.customer_id });
    assert.ok(!JSON.stringify(detail).includes("tok_slow_1500"), "the card token is never stored or shown");
    assert.equal(detail.request.charge?.amountCents, 1999);
    assert.equal(detail.counts.in_progress, 1);
    assert.equal(detail.counts.replayed, 1);
    const claimed = detail.timeline.find((e) => e.kind === "claimed")!;
    assert.match(claimed.instance, /:\d+$/, "each event names its instance");
    assert.equal(claimed.fromRecord, false);
  });

  test("a same-client reuse shows which fields differed; another client's attempt shows nothing it sent", async () => {
    const key = uniqueKey("reuse");
    const body = chargeBody();
    await postCharge({ apiKey: client.apiKey, key, body });
    assert.equal((await postCharge({ apiKey: client.apiKey, key, body: { ...body, amount_cents: 5 } })).status, 422);
    assert.equal(
      (await postCharge({ apiKey: client.apiKey, key, body: { ...body, card_token: "tok_mastercard" } })).status,
      422,
    );
    const other = await newApiClient("trpc-other");
    assert.equal((await postCharge({ apiKey: other.apiKey, key, body: { ...body, amount_cents: 7777 } })).status, 422);
    const record = (await recordOf(key))!;
    const detail = await as(support).requests.byId({ id: String(record.id) });
    const [cross, token, amount] = detail.reuses;
    assert.deepEqual(amount!.diff, {
      differences: [{ field: "amount_cents", stored: 1999, attempted: 5 }],
      cardToken: "not_compared",
    });
    assert.deepEqual(token!.diff, { differences: [], cardToken: "differed" });
    assert.equal(cross!.otherClient?.id, other.id);
    assert.equal(cross!.diff, null);
    assert.ok(!JSON.stringify(detail).includes("7777"), "nothing the other client sent is shown");
    const stored = await db.keyReuseAttempt.findFirstOrThrow({ where: { apiClientId: other.id } });
    assert.equal(stored.attemptedFields, null, "nor stored");

    const groups = await as(support).requests.reuses({ kind: "same_client" });
    const group = groups.groups.find((g) => g.idempotencyKey === key)!;
    assert.equal(group.attempts, 2);
    assert.equal(group.original?.id, String(record.id));
    const crossGroups = await as(support).requests.reuses({ kind: "cross_client" });
    assert.equal(crossGroups.groups.find((g) => g.idempotencyKey === key)?.attempts, 1);
  });

  test("customer view: keyed and keyless charges, a possible duplicate flagged, a keyless charge's page", async () => {
    const body = chargeBody({ amount_cents: 4242 });
    const keyless = await postCharge({ apiKey: client.apiKey, body });
    const retried = await postCharge({ apiKey: client.apiKey, body });
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: { ...body, amount_cents: 100 } });
    const s = as(support);
    const view = await s.customers.charges({ customerId: body.customer_id });
    assert.equal(view.charges.length, 3);
    assert.deepEqual(view.total, { count: 3, capped: false });
    const flagged = view.charges
      .filter((c) => c.possibleDuplicateOf)
      .map((c) => c.id)
      .sort();
    assert.deepEqual(flagged, [keyless.json.id, retried.json.id].sort());
    const page = await s.customers.charge({ id: keyless.json.id });
    assert.equal(page.request?.idempotencyKey, null, "a keyless charge has its record too");
    assert.equal(page.possibleDuplicateOf?.id, retried.json.id);
    await rejectsWith(s.customers.charge({ id: "ch_doesnotexist" }), "NOT_FOUND");

    await scanForDuplicates({ now: new Date(Date.now() + 10_000) });
    const list = await s.customers.duplicates({ windowMinutes: 10 });
    assert.ok(list.items.some((d) => d.id === retried.json.id && d.earlierId === keyless.json.id));
  });

  test("per-client enforcement: required for one client (audited), others unaffected, refusals counted", async () => {
    const strict = await newApiClient("trpc-strict");
    const lax = await newApiClient("trpc-lax");
    await postCharge({ apiKey: strict.apiKey, body: chargeBody() });
    const before = await as(support).rollout.status();
    assert.ok(
      before.blocking.some((b) => b.apiClientId === strict.id),
      "a client with keyless traffic blocks enforcing",
    );
    assert.equal(before.clients.find((c) => c.apiClientId === strict.id)?.keylessLastHour, 1);

    await as(engineer).rollout.setClientRequired({
      clientId: strict.id,
      required: true,
      reason: "strict reached zero",
    });
    await rejectsWith(
      as(engineer).rollout.setClientRequired({ clientId: strict.id, required: true, reason: "again" }),
      "CONFLICT",
    );
    const refused = await postCharge({ apiKey: strict.apiKey, body: chargeBody() });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.code, "idempotency_key_required");
    assert.equal((await postCharge({ apiKey: strict.apiKey, key: uniqueKey(), body: chargeBody() })).status, 201);
    assert.equal((await postCharge({ apiKey: lax.apiKey, body: chargeBody() })).status, 201);

    const after = await as(support).rollout.status();
    const row = after.clients.find((c) => c.apiClientId === strict.id)!;
    assert.equal(row.enforced, "client");
    assert.equal(row.rejected, 1);
    assert.equal(after.mode, "optional");
    const audit = await db.auditEvent.findFirstOrThrow({
      where: { action: "client_mode.changed", targetId: String(strict.id) },
    });
    assert.deepEqual(JSON.parse(audit.details!), { from: "global", to: "required", reason: "strict reached zero" });
    await as(engineer).rollout.setClientRequired({ clientId: strict.id, required: false, reason: "done" });
    assert.equal((await postCharge({ apiKey: strict.apiKey, body: chargeBody() })).status, 201);
  });

  test("rollout series: every bucket present, hours without traffic are null, not 0 %", async () => {
    const fresh = await newApiClient("trpc-series");
    await postCharge({ apiKey: fresh.apiKey, body: chargeBody() });
    await postCharge({ apiKey: fresh.apiKey, key: uniqueKey(), body: chargeBody() });
    const series = await waitFor("the keyed request to be counted", async () => {
      const s = await as(support).rollout.series({ granularity: "hour", clientIds: [fresh.id] });
      return s.clients[0]!.points.at(-1)!.keyed === 1 && s;
    });
    const points = series.clients[0]!.points;
    // From the first counted hour (or 48 h back, whichever is later) to now, every hour present.
    const hours = (points.at(-1)!.bucket.getTime() - series.since.getTime()) / 3_600_000 + 1;
    assert.ok(series.since >= series.spanStart);
    assert.equal(points.length, hours);
    assert.equal(points.at(-1)!.keylessShare, 0.5);
    for (const p of points) {
      if (p.keyed + p.keyless === 0) assert.equal(p.keylessShare, null, "no traffic is not 0 % keyless");
    }
    const daily = await as(support).rollout.series({ granularity: "day" });
    assert.ok(daily.all.length >= 1 && daily.since >= daily.spanStart);
  });

  test("rollout series in the first hours: per minute, from the records; attempts and refusals not known", async () => {
    const fresh = await newApiClient("trpc-minutes");
    await postCharge({ apiKey: fresh.apiKey, body: chargeBody() });
    const key = uniqueKey();
    await postCharge({ apiKey: fresh.apiKey, key, body: chargeBody() });
    await postCharge({ apiKey: fresh.apiKey, key: uniqueKey(), body: chargeBody() });
    const series = await as(support).rollout.series({ granularity: "minute", clientIds: [fresh.id] });
    assert.equal(series.granularity, "minute");
    const points = series.clients[0]!.points;
    const minutes = (points.at(-1)!.bucket.getTime() - series.since.getTime()) / 60_000 + 1;
    assert.equal(points.length, minutes, "every minute from the first to now");
    assert.ok(points.length <= 121 && series.since >= series.spanStart);
    const sum = (k: "keyed" | "keyless") => points.reduce((n, p) => n + p[k], 0);
    assert.deepEqual([sum("keyed"), sum("keyless")], [2, 1], "operations and keyless requests, from their records");
    assert.ok(points.every((p) => p.keyedAttempts === null && p.rejected === null));
    // Left to choose, the chart goes per minute while the counts are a few hours old.
    const auto = await as(support).rollout.series({ clientIds: [fresh.id] });
    const first = (await db.requestCountBucket.aggregate({ _min: { bucketStart: true } }))._min.bucketStart;
    const folded = (await db.requestCountHour.aggregate({ _min: { bucketStart: true } }))._min.bucketStart;
    const earliest = [first, folded].filter((d): d is Date => d !== null).sort((a, b) => +a - +b)[0] ?? null;
    assert.equal(auto.granularity, automaticGranularity(earliest, new Date()));
  });

  test("sweep status reports the table without counting it", async () => {
    const status = await as(support).sweep.status();
    assert.ok(status.tableBytes > 0);
  });
});
