/**
 * After a fault run's deliveries drained: every event reached every endpoint subscribed to its type, was
 * processed exactly once by that endpoint's deduplicating receiver, and was signed rightly; no delivery was left
 * pending, given up or cancelled; every money row (charge, refund) and every finished operation has its event.
 * Counts what it checked; each failure is a violation. Runs in the fault runner's process (its environment points
 * at the run's database).
 */
import { db } from "~/server/db";
import type { RunEndpoint } from "./receivers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until no delivery is pending (each one delivered, or given up), or `deadlineMs` passed. How many are. */
export async function waitForDeliveries(deadlineMs: number): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const pending = await db.webhookDelivery.count({ where: { state: "pending" } }).catch(() => -1);
    if (pending === 0 || Date.now() > deadline) return pending;
    await sleep(500);
  }
}

/** What the run asked for: "*" or the listed types (independent of how the app stores and matches them). */
const subscribes = (endpoint: RunEndpoint, type: string) =>
  endpoint.types.includes("*") || endpoint.types.includes(type);

type EventRow = { id: string; type: string; apiClientId: number; objectId: string | null; chargeId: string | null };

export async function verifyWebhooks(endpoints: RunEndpoint[]) {
  const violations: string[] = [];
  const events: (EventRow & { requestId: bigint | null; data: string })[] = await db.event.findMany({
    select: { id: true, type: true, apiClientId: true, objectId: true, chargeId: true, requestId: true, data: true },
  });
  const clients = (await db.apiClient.findMany({ orderBy: { id: "asc" }, select: { id: true } })).map((c) => c.id);
  // First what explains many of the per-event violations below.
  for (const e of await db.webhookEndpoint.findMany({ where: { enabled: false } }))
    violations.push(`endpoint ${e.id} was disabled: ${e.disabledReason}`);
  const received = endpoints.flatMap((e) => e.receiver.received);
  const badSignatures = received.filter((r) => r.badSignature).length;
  if (badSignatures > 0) violations.push(`${badSignatures} deliveries did not verify (bad signature)`);

  // Every (event, subscribed endpoint): a delivery, delivered; processed once by that endpoint's receiver.
  const deliveries = await db.webhookDelivery.findMany({ select: { eventId: true, endpointId: true, state: true } });
  const deliveryOf = new Map(deliveries.map((d) => [`${d.eventId} ${d.endpointId}`, d]));
  const deliveryStates: Record<string, number> = {};
  for (const d of deliveries) deliveryStates[d.state] = (deliveryStates[d.state] ?? 0) + 1;
  let expected = 0;
  let processedOnce = 0;
  const expectedPairs = new Set<string>();
  for (const endpoint of endpoints) {
    const processed = new Map<string, number>();
    for (const p of await endpoint.receiver.processed()) processed.set(p.eventId, (processed.get(p.eventId) ?? 0) + 1);
    const verified = new Set(endpoint.receiver.received.filter((r) => r.verified).map((r) => r.id));
    const mine = events.filter((e) => e.apiClientId === clients[endpoint.client] && subscribes(endpoint, e.type));
    for (const event of mine) {
      expected += 1;
      const pair = `${event.id} ${endpoint.id}`;
      expectedPairs.add(pair);
      const what = `event ${event.id} (${event.type}) to endpoint ${endpoint.id}`;
      const delivery = deliveryOf.get(pair);
      if (!delivery) violations.push(`${what}: no delivery was made for it`);
      else if (delivery.state !== "delivered") violations.push(`${what}: its delivery is ${delivery.state}`);
      const times = processed.get(event.id) ?? 0;
      if (times === 1) processedOnce += 1;
      else {
        const got = verified.has(event.id) ? "received with a good signature" : "never received with a good one";
        violations.push(`${what}: processed ${times} times by its receiver (${got})`);
      }
      processed.delete(event.id);
    }
    for (const [eventId, times] of processed)
      violations.push(`endpoint ${endpoint.id}: processed event ${eventId} (${times}x), not one it subscribed to`);
  }
  for (const d of deliveries)
    if (!expectedPairs.has(`${d.eventId} ${d.endpointId}`))
      violations.push(`delivery of event ${d.eventId} to endpoint ${d.endpointId}: not subscribed, made anyway`);

  const money = await moneyRowsWithEvents(events, violations);
  const attempts = await db.webhookAttempt.count();
  const byType: Record<string, number> = {};
  for (const e of events) byType[e.type] = (byType[e.type] ?? 0) + 1;
  return {
    violations,
    events: events.length,
    byType,
    expected,
    processedOnce,
    deliveryStates,
    attempts,
    received: received.length,
    duplicates: received.filter((r) => r.duplicate).length,
    badSignatures,
    ...money,
  };
}

/**
 * Every charge has its charge.succeeded or charge.failed (or, made late and given back, charge.late_healed);
 * every refund its refund.succeeded or refund.late_recorded, or is the refund inside its charge's
 * charge.late_healed; every finished operation (its request record) has an event naming it.
 */
async function moneyRowsWithEvents(events: (EventRow & { requestId: bigint | null; data: string })[], v: string[]) {
  const typesOf = new Map<string, Set<string>>();
  for (const e of events) {
    if (e.objectId === null) continue;
    typesOf.set(e.objectId, (typesOf.get(e.objectId) ?? new Set()).add(e.type));
  }
  const healedRefunds = new Set(
    events
      .filter((e) => e.type === "charge.late_healed")
      .flatMap((e) => ((JSON.parse(e.data) as { refunds?: { id: string }[] }).refunds ?? []).map((r) => r.id)),
  );
  const charges = await db.charge.findMany({ select: { id: true, status: true } });
  for (const c of charges) {
    const types = typesOf.get(c.id);
    if (!types?.has(`charge.${c.status}`) && !types?.has("charge.late_healed"))
      v.push(`charge ${c.id} (${c.status}) has no charge.${c.status} event`);
  }
  const refunds = await db.refund.findMany({ select: { id: true } });
  for (const r of refunds) {
    const types = typesOf.get(r.id);
    if (!types?.has("refund.succeeded") && !types?.has("refund.late_recorded") && !healedRefunds.has(r.id))
      v.push(`refund ${r.id} has no refund.succeeded event`);
  }
  const withEvents = new Set(events.map((e) => e.requestId).filter((id) => id !== null));
  const finished = await db.idempotentRequest.findMany({ where: { state: "complete" }, select: { id: true } });
  for (const r of finished) if (!withEvents.has(r.id)) v.push(`finished operation ${r.id} has no event`);
  return { charges: charges.length, refunds: refunds.length, finishedOperations: finished.length };
}
