import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { TRPCError } from "@trpc/server";
import { staffContext } from "~/server/audit/audit";
import type { SessionUser } from "~/server/auth/session";
import { setIdempotencyMode } from "~/server/rollout/mode";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge, uniqueKey, waitFor } from "./helpers";

let support: SessionUser;
let engineer: SessionUser;
let client: { id: number; apiKey: string };

async function staff(role: "support" | "engineer"): Promise<SessionUser> {
  const u = await db.staffUser.create({ data: { email: `${role}-${uniqueKey()}@example.com`, name: `T ${role}`, role, passwordHash: "x" } });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

const as = (user: SessionUser | null) => createCaller(createInnerTRPCContext({ user }));

async function rejectsWith(promise: Promise<unknown>, code: TRPCError["code"]) {
  await assert.rejects(promise, (e: unknown) => e instanceof TRPCError && e.code === code);
}

before(async () => {
  support = await staff("support");
  engineer = await staff("engineer");
  client = await newApiClient("trpc");
});
after(async () => {
  await setIdempotencyMode("optional", staffContext(engineer));
  await closeConnections();
});

describe("tRPC procedures", () => {
  test("every procedure refuses anonymous callers with UNAUTHORIZED", async () => {
    const anon = as(null);
    await rejectsWith(anon.requests.inFlight({}), "UNAUTHORIZED");
    await rejectsWith(anon.requests.search({ query: "x" }), "UNAUTHORIZED");
    await rejectsWith(anon.rollout.overview({}), "UNAUTHORIZED");
    await rejectsWith(anon.rollout.setMode({ mode: "required" }), "UNAUTHORIZED");
    await rejectsWith(anon.sweep.status(), "UNAUTHORIZED");
  });

  test("support can read but not switch the mode (FORBIDDEN); engineers can, and it is audited", async () => {
    await rejectsWith(as(support).rollout.setMode({ mode: "required" }), "FORBIDDEN");
    const entry = await as(engineer).rollout.setMode({ mode: "required" });
    assert.equal(entry.toMode, "required");
    const overview = await as(support).rollout.overview({});
    assert.equal(overview.mode, "required");
    assert.equal(overview.auditLog[0]!.actor, engineer.email);
    await as(engineer).rollout.setMode({ mode: "optional" });
  });

  test("search finds a record by key, by charge id and by customer", async () => {
    const key = uniqueKey("search");
    const body = chargeBody();
    const res = await postCharge({ apiKey: client.apiKey, key, body });
    const caller = as(support);
    for (const query of [key, res.json.id, body.customer_id]) {
      const found = await caller.requests.search({ query });
      assert.equal(found.requests.length, 1, `search ${query}`);
      assert.equal(found.requests[0]!.idempotencyKey, key);
    }
    const detail = await caller.requests.byId({ id: String((await caller.requests.search({ query: key })).requests[0]!.id) });
    assert.equal(detail?.request.charge?.id, res.json.id);
    assert.deepEqual(Object.keys(detail!.request.apiClient).sort(), ["id", "name"], "nothing about keys is exposed");
    assert.ok(!JSON.stringify(detail, (_, v) => (typeof v === "bigint" ? String(v) : v)).includes(client.apiKey));
  });

  test("in-flight list: filters by client and paginates with a cursor", async () => {
    const other = await newApiClient("trpc-other");
    const slow = chargeBody({ card_token: "tok_slow_2500" });
    const pending = [
      ...[1, 2, 3].map(() => postCharge({ apiKey: client.apiKey, key: uniqueKey("flight"), body: { ...slow, customer_id: `cus_${uniqueKey()}`.slice(0, 40) } })),
      postCharge({ apiKey: other.apiKey, key: uniqueKey("flight"), body: slow }),
    ];
    await new Promise((r) => setTimeout(r, 700));
    const caller = as(support);
    const first = await caller.requests.inFlight({ apiClientId: client.id, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.nextCursor);
    const second = await caller.requests.inFlight({ apiClientId: client.id, limit: 2, cursor: first.nextCursor });
    assert.equal(second.items.length, 1);
    assert.equal(second.nextCursor, null);
    const ids = [...first.items, ...second.items].map((i) => i.id);
    assert.equal(new Set(ids).size, 3);
    assert.ok([...first.items, ...second.items].every((i) => i.apiClient.id === client.id));
    const future = await caller.requests.inFlight({ apiClientId: client.id, since: new Date(Date.now() + 3_600_000) });
    assert.equal(future.items.length, 0, "the time filter applies");
    await Promise.all(pending);
  });

  test("key-reuse list shows the attempt with both hashes", async () => {
    const key = uniqueKey("reuse");
    const body = chargeBody();
    await postCharge({ apiKey: client.apiKey, key, body });
    await postCharge({ apiKey: client.apiKey, key, body: { ...body, amount_cents: 5 } });
    const list = await as(support).requests.keyReuses({ apiClientId: client.id });
    const attempt = list.items.find((i) => i.idempotencyKey === key);
    assert.ok(attempt);
    assert.notEqual(attempt.storedHash, attempt.attemptedHash);
    assert.equal(attempt.apiClient?.id, client.id);
  });

  test("rollout overview: per-client keyless counts and the safe-to-enforce signal", async () => {
    const fresh = await newApiClient("trpc-rollout");
    await postCharge({ apiKey: fresh.apiKey, body: chargeBody() });
    await postCharge({ apiKey: fresh.apiKey, key: uniqueKey(), body: chargeBody() });
    // Keyed counts reach the table within a second (they are summed in memory).
    const overview = await waitFor("the keyed request to be counted", async () => {
      const o = await as(support).rollout.overview({ granularity: "hour" });
      return o.clients.find((c) => c.apiClientId === fresh.id)?.keyed === 1 && o;
    });
    const row = overview.clients.find((c) => c.apiClientId === fresh.id);
    assert.equal(row?.keyless, 1);
    assert.equal(row?.keyed, 1);
    assert.equal(row?.keylessShare, 0.5);
    assert.ok(row?.keyPreview.endsWith("…"));
    assert.equal(overview.safeToEnforce, false, "keyless traffic just happened");
    assert.ok(overview.series.length >= 1);
    const daily = await as(support).rollout.overview({ granularity: "day" });
    assert.ok(daily.series.length >= 1);
  });

  test("sweep status reports the table", async () => {
    const status = await as(support).sweep.status();
    assert.ok(status.records > 0);
    assert.ok(status.tableBytes > 0);
  });
});
