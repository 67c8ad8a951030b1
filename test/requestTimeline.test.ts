/**
 * The request page's timeline beyond the happy path, through the tRPC
 * procedure against the real app: a claim released after an unknown gateway
 * outcome, taken over by a retry (after a release, after a lease ran out),
 * finished by the sweeper (reaped: abandoned; or reconciled: the gateway had
 * charged), each entry with its time and the instance that did it. The
 * sweeper runs in this process (runSweep, as scripts/test.ts calls it), so its
 * entries name this process, and the app's name the app.
 */
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import type { SessionUser } from "~/server/auth/session";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { requestHash, runIdempotent } from "~/server/idempotency";
import { flushEvents } from "~/server/idempotency/maintenance";
import { runSweep } from "~/server/sweep/runSweep";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import {
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  postCharge,
  recordOf,
  seedRecord,
  uniqueKey,
  untilGatewayShowsCharge,
  waitFor,
  onlyWork,
} from "./helpers";

/** How this process's events are signed (src/server/idempotency/events.ts). */
const THIS_PROCESS = `${hostname()}:${process.pid}`;

let support: SessionUser;
let client: { id: number; apiKey: string };

type Detail = Awaited<ReturnType<ReturnType<typeof createCaller>["requests"]["byId"]>>;
/** Who wrote an entry: the app, this process (its sweeper, or a domain call), or nobody (read from the record). */
type Step = { kind: string; detail?: string | null; by: "app" | "sweeper" | "this process" | "record" };

const detailOf = (id: bigint) =>
  createCaller(createInnerTRPCContext({ user: support })).requests.byId({ id: String(id) });

/** The timeline once the events written so far include `kind` (the app writes its events within a second). */
const timelineWith = (id: bigint, kind: string, detail: string | null = null) =>
  waitFor(`a "${kind} ${detail ?? ""}" event on the timeline`, async () => {
    const d = await detailOf(id);
    return d.timeline.some((e) => !e.fromRecord && e.kind === kind && e.detail === detail) && d;
  });

/**
 * The timeline once it has the completion, written as an event (not read from the record), and after it only
 * what attempts were answered.
 */
const timelineEndingWith = async (id: bigint, detail: string, answers = 0) => {
  const d = await waitFor("the completion and the answers after it", async () => {
    const t = await timelineWith(id, "completed", detail);
    const after = t.timeline.slice(t.timeline.findIndex((e) => e.kind === "completed") + 1);
    return after.length === answers && after.every((e) => e.kind === "answered") && t;
  });
  return d;
};

/**
 * The timeline is exactly `steps`, oldest first, each from the instance said: the app's own (not this process),
 * this process's sweeper, or read from the record (no event of it was written). Times never go back.
 */
function assertTimeline(d: Detail, steps: Step[]) {
  assert.deepEqual(
    d.timeline.map((e) => `${e.kind} ${e.detail ?? ""}`.trim()),
    steps.map((s) => `${s.kind} ${s.detail ?? ""}`.trim()),
    "the entries, in order",
  );
  steps.forEach((step, i) => {
    const e = d.timeline[i]!;
    assert.ok(e.at instanceof Date && !Number.isNaN(e.at.getTime()), `${e.kind} has a time`);
    if (i > 0) assert.ok(e.at >= d.timeline[i - 1]!.at, `${e.kind} is not before the entry above it`);
    if (step.by === "record") assert.deepEqual([e.fromRecord, e.instance], [true, "not recorded"]);
    else {
      assert.equal(e.fromRecord, false);
      assert.match(e.instance, /^.+:\d+$/, `${e.kind} names its instance`);
      if (step.by !== "app") assert.equal(e.instance, THIS_PROCESS, `${e.kind} was ${step.by}'s`);
      else assert.notEqual(e.instance, THIS_PROCESS, `${e.kind} was the app's`);
    }
  });
}

/**
 * The sweeper's entries up to its completion: until the gateway's answer is proven (its lookup lags behind its
 * writes), a sweep takes the record over and gives it back; then it takes it over and finishes it.
 */
function sweeperSteps(d: Detail, before: number, completed: string): Step[] {
  const rounds = (d.timeline.length - before - 2) / 2;
  return [
    ...Array.from({ length: rounds }, (): Step[] => [
      { kind: "taken_over", detail: "recovery", by: "sweeper" },
      { kind: "released", detail: "outcome unknown", by: "sweeper" },
    ]).flat(),
    { kind: "taken_over", detail: "recovery", by: "sweeper" },
    { kind: "completed", detail: completed, by: "sweeper" },
  ];
}

/** Sweeps (finishing anything idle, however young) until the record is complete. */
async function sweepUntilComplete(id: bigint) {
  await waitFor(
    "the sweeper to finish the record",
    async () => {
      await runSweep({ reapAfterMs: 0, reconcile: false });
      const row = await db.idempotentRequest.findUniqueOrThrow({ where: { id } });
      return row.state === "complete";
    },
    20_000,
  );
}

before(async () => {
  const u = await db.staffUser.create({
    data: { email: `timeline-${uniqueKey()}@example.com`, name: "Timeline", role: "support", passwordHash: "x" },
  });
  support = { id: u.id, email: u.email, name: u.name, role: u.role };
  client = await newApiClient("timeline");
});
after(closeConnections);

describe("request timeline beyond the happy path", () => {
  test("an unknown outcome releases the claim; the retry takes it over and completes", async () => {
    const key = uniqueKey("released");
    // Slower than the app's gateway timeout: the app gives up (outcome unknown) and the charge completes after.
    // (Not a 500: under GATEWAY=stripe the provider saves a 500 under the key and answers every retry with it.)
    const body = chargeBody({ card_token: `tok_slow_${env.GATEWAY_TIMEOUT_MS + 500}` });
    const first = await postCharge({ apiKey: client.apiKey, key, body });
    assert.equal(first.status, 503, first.text);
    const released = (await recordOf(key))!;
    assert.equal(released.phase.name, "released");
    await untilGatewayShowsCharge(released);
    const retry = await postCharge({ apiKey: client.apiKey, key, body });
    assert.equal(retry.status, 201, retry.text);
    const record = (await recordOf(key))!;
    const d = await timelineEndingWith(record.id, "request 201", 1);
    assertTimeline(d, [
      { kind: "claimed", by: "app" },
      { kind: "released", detail: "outcome unknown", by: "app" },
      { kind: "answered", detail: "gateway_unavailable", by: "app" },
      { kind: "taken_over", detail: "retry", by: "app" },
      { kind: "completed", detail: "request 201", by: "app" },
      { kind: "answered", detail: "fresh", by: "app" },
    ]);
    assert.equal(d.counts.taken_over, 1);
    assert.equal(d.timeline[3]!.attempt, 2, "the take-over is the second attempt");
    const answers = d.timeline.filter((e) => e.kind === "answered");
    assert.deepEqual(
      answers.map((e) => [e.answer?.status, e.apiRequestId]),
      [
        [503, first.headers.get("request-id")],
        [201, retry.headers.get("request-id")],
      ],
      "each attempt's status and Request-Id",
    );
  });

  test("a retry takes over a claim whose lease ran out (its holder died)", async () => {
    const key = uniqueKey("expired");
    const body = chargeBody();
    // Its first attempt a moment ago: a retry within the attempt window calls the gateway again.
    const stalled = await seedRecord({ apiClientId: client.id, phase: "lease_expired", key, body, ageMs: 1_000 });
    const retry = await postCharge({ apiKey: client.apiKey, key, body });
    assert.equal(retry.status, 201, retry.text);
    const d = await timelineEndingWith(stalled.id, "request 201", 1);
    assertTimeline(d, [
      { kind: "claimed", by: "record" }, // the dead holder's claim: only the record knows it
      { kind: "taken_over", detail: "retry", by: "app" },
      { kind: "completed", detail: "request 201", by: "app" },
      { kind: "answered", detail: "fresh", by: "app" },
    ]);
    assert.equal(d.timeline[0]!.at.getTime(), stalled.createdAt.getTime());
  });

  // A released claim nobody retries: the sweeper asks the gateway and finishes it either way.
  const finishedBySweeper = [
    { name: "nothing was charged: the sweeper reaps it (abandoned)", card: "tok_error", outcome: "abandoned 500" },
    {
      name: "the gateway had charged: the sweeper reconciles it with the real 201",
      card: "tok_charge_then_error",
      outcome: "reconciled 201",
    },
  ];
  for (const { name, card, outcome } of finishedBySweeper) {
    test(`a released claim nobody retries, ${name}`, async () => {
      const key = uniqueKey("swept");
      const body = chargeBody({ card_token: card });
      assert.equal((await postCharge({ apiKey: client.apiKey, key, body })).status, 503);
      const record = (await recordOf(key))!;
      await timelineWith(record.id, "released", "outcome unknown"); // written by the app before the sweeper comes
      await sweepUntilComplete(record.id);
      const d = await timelineEndingWith(record.id, outcome);
      assertTimeline(d, [
        { kind: "claimed", by: "app" },
        { kind: "released", detail: "outcome unknown", by: "app" },
        { kind: "answered", detail: "gateway_unavailable", by: "app" },
        ...sweeperSteps(d, 3, outcome),
      ]);
      if (outcome === "reconciled 201") {
        assert.equal(d.request.charge?.amountCents, body.amount_cents, "the charge the gateway made, recorded");
      }
    });
  }

  test("a keyless request's timeline: released after an unknown outcome, then reconciled by the sweeper", async () => {
    const body = chargeBody({ card_token: "tok_charge_then_error" });
    const res = await postCharge({ apiKey: client.apiKey, body });
    assert.equal(res.status, 502, res.text);
    const id = BigInt(res.json.error.request_id);
    await timelineWith(id, "released", "outcome unknown");
    await sweepUntilComplete(id);
    const d = await timelineEndingWith(id, "reconciled 201");
    assert.equal(d.request.idempotencyKey, null);
    assertTimeline(d, [
      { kind: "claimed", by: "app" },
      { kind: "released", detail: "outcome unknown", by: "app" },
      { kind: "answered", detail: "charge_outcome_unknown", by: "app" },
      ...sweeperSteps(d, 3, "reconciled 201"),
    ]);
  });

  test("work that fails with an error releases the claim; the timeline says so, not 'outcome unknown'", async () => {
    const key = uniqueKey("error");
    const claim = { idempotencyKey: key, route: CHARGES_ROUTE, apiClientId: client.id, requestHash: requestHash({}) };
    const failing = async () => {
      throw new Error("the database went away");
    };
    await assert.rejects(runIdempotent(claim, onlyWork(failing)), /went away/);
    await flushEvents();
    const record = (await recordOf(key))!;
    assert.equal(record.phase.name, "released");
    assertTimeline(await detailOf(record.id), [
      { kind: "claimed", by: "this process" },
      { kind: "released", detail: "error", by: "this process" },
    ]);
    await db.idempotentRequest.delete({ where: { id: record.id } }); // nothing for a sweeper to ask the gateway about
  });
});
