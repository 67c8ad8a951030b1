/**
 * After a fault run, the refunds' invariants, read straight from both sides (the app's tables and the gateway's
 * lists), beside the ledger reconciliation's own findings:
 * - refunded <= charged per charge, in the app (made and held) and at the gateway;
 * - gateway refunds and app refunds 1:1 by the derived key, same refund id and amount;
 * - no refund without its charge: every app refund's charge succeeded, every gateway refund's charge is one of
 *   the app's succeeded charges;
 * - at most one gateway refund per operation;
 * - nothing left held after the final sweep: every hold was released or turned into a refund;
 * - no refusal stored (404, 409, 400), also where it lost a race for what was left after its claim;
 * - every refund answer a client saw agrees with the ledger.
 */
import { db, queryRows } from "~/server/db";
import { deriveGatewayKey, gateway, type ListedGatewayCharge, type ListedGatewayRefund } from "~/server/gateway";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { healingRoutes } from "~/server/ledger/healLateCharge";
import type { RefundObservation } from "./run";

export async function allGatewayRefunds(since: Date, until: Date): Promise<ListedGatewayRefund[]> {
  const refunds: ListedGatewayRefund[] = [];
  let cursor: string | undefined;
  do {
    const page = await gateway.listRefunds({ since, until, cursor });
    refunds.push(...page.refunds);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return refunds;
}

/**
 * The routes a gateway refund's key may be derived on: a refund operation's, or the healing of a late charge
 * (ledger/healLateCharge.ts), which refunds under the charge operation's keys on routes of their own: one
 * operation, whichever of them its refund was made under.
 */
const REFUND_KEY_ROUTES: [derivedOn: string, operation: string][] = [
  [REFUNDS_ROUTE, REFUNDS_ROUTE],
  ...healingRoutes(CHARGES_ROUTE).map((route): [string, string] => [route, `${CHARGES_ROUTE}#heal`]),
];

/** The operation route whose derived key the gateway refund's own metadata gives back, if any. */
function routeOf(r: ListedGatewayRefund): string | null {
  const { metadata } = r;
  if (!metadata || !/^\d{1,19}$/.test(metadata.requestId)) return null;
  const record = { apiClientId: Number(metadata.apiClientId), idempotencyKey: metadata.idempotencyKey };
  const id = BigInt(metadata.requestId);
  const found = REFUND_KEY_ROUTES.find(([route]) => deriveGatewayKey({ ...record, route, id }) === r.idempotencyKey);
  return found?.[1] ?? null;
}

/** The operation a gateway refund belongs to, from what the app sent beside it. */
const operationOf = (r: ListedGatewayRefund) =>
  r.metadata?.idempotencyKey
    ? `${routeOf(r)}:${r.metadata.apiClientId}:${r.metadata.idempotencyKey}`
    : `record:${r.metadata?.requestId ?? r.id}:${routeOf(r)}`;

export async function verifyRefunds(
  observations: RefundObservation[],
  gatewayCharges: ListedGatewayCharge[],
  /** The gateway's refunds of the run (allGatewayRefunds). */
  listed: ListedGatewayRefund[],
) {
  const violations: string[] = [];
  const appRefunds = await db.refund.findMany({ include: { charge: true } });
  const appByKey = new Map(appRefunds.map((r) => [r.gatewayIdempotencyKey, r]));
  const listedByKey = new Map(listed.map((r) => [r.idempotencyKey, r]));
  const gatewayChargeById = new Map(gatewayCharges.map((c) => [c.id, c]));

  // Per charge in the app: made + held within the charge, nothing held any more, made = the sum of its refunds.
  const charges = await queryRows<{ id: string; amount: number; refunded: number; held: number; sum: number }>({
    sql: `SELECT c.id, c.amount_cents AS amount, c.amount_refunded_cents AS refunded, c.refund_held_cents AS held,
                 CAST((SELECT COALESCE(SUM(r.amount_cents), 0) FROM refunds r WHERE r.charge_id = c.id) AS INT) AS sum
            FROM charges c
          HAVING refunded + held > amount OR held <> 0 OR refunded <> sum`,
    values: [],
  });
  for (const c of charges) {
    violations.push(
      `charge ${c.id}: charged ${c.amount}, refunded ${c.refunded}, held ${c.held}, its refunds add up to ${c.sum}`,
    );
  }
  const holds = await db.refundHold.findMany({ select: { idempotentRequestId: true, chargeId: true } });
  for (const h of holds) violations.push(`refund hold of record ${h.idempotentRequestId} on ${h.chargeId} left`);
  const storedRefusals = await db.idempotentRequest.findMany({
    where: { route: REFUNDS_ROUTE, responseStatus: { in: [400, 404, 409] } },
    select: { id: true, responseStatus: true },
  });
  for (const r of storedRefusals) violations.push(`refund record ${r.id}: a refusal stored (${r.responseStatus})`);

  // Per charge at the gateway: its refunds within it, and each refund of a charge the app charged.
  const refundedAtGateway = new Map<string, number>();
  for (const r of listed) refundedAtGateway.set(r.chargeId, (refundedAtGateway.get(r.chargeId) ?? 0) + r.amountCents);
  for (const [chargeId, refunded] of refundedAtGateway) {
    const charged = gatewayChargeById.get(chargeId);
    if (!charged) violations.push(`gateway refunds of ${chargeId}, a charge the gateway did not list for the run`);
    else if (refunded > charged.amountCents)
      violations.push(`gateway charge ${chargeId}: charged ${charged.amountCents}, refunded ${refunded}`);
  }

  // 1:1 by the derived key, which the gateway refund's own metadata must give back.
  for (const r of listed) {
    if (!routeOf(r)) violations.push(`gateway refund ${r.id}: its key is not its operation's`);
    const app = appByKey.get(r.idempotencyKey);
    if (!app) violations.push(`gateway refund ${r.id} (${r.amountCents} of ${r.chargeId}) has no app refund`);
    else if (
      app.gatewayRefundId !== r.id ||
      app.amountCents !== r.amountCents ||
      app.charge.gatewayChargeId !== r.chargeId
    )
      violations.push(`gateway refund ${r.id} differs from app refund ${app.id}`);
  }
  for (const app of appRefunds) {
    if (!listedByKey.has(app.gatewayIdempotencyKey))
      violations.push(`app refund ${app.id} (${app.amountCents} of ${app.chargeId}) has no gateway refund`);
    if (app.charge.status !== "succeeded") violations.push(`app refund ${app.id} of a ${app.charge.status} charge`);
  }
  if (listed.length !== appRefunds.length)
    violations.push(`gateway refunds ${listed.length}, app refunds ${appRefunds.length}`);

  // At most one gateway refund per operation.
  const perOperation = new Map<string, number>();
  for (const r of listed) perOperation.set(operationOf(r), (perOperation.get(operationOf(r)) ?? 0) + 1);
  for (const [op, n] of perOperation) if (n > 1) violations.push(`${n} gateway refunds for refund operation ${op}`);

  // Every refund answer a client saw agrees with the ledger.
  const clientIds = (await db.apiClient.findMany({ orderBy: { id: "asc" }, select: { id: true } })).map((c) => c.id);
  for (const o of observations) {
    const what = `refund operation ${o.index} (${o.kind}${o.key ? ` ${o.key}` : ""})`;
    if (o.status === 201) {
      const refund = appRefunds.find((r) => r.id === o.refundId);
      if (!refund) violations.push(`${what}: answered 201 with refund ${o.refundId}, which the app does not have`);
      else if (refund.chargeId !== o.body.charge)
        violations.push(`${what}: refund ${refund.id} is of ${refund.chargeId}, asked ${o.body.charge}`);
      else if (o.body.amount_cents !== undefined && refund.amountCents !== o.body.amount_cents)
        violations.push(`${what}: refunded ${refund.amountCents}, asked ${o.body.amount_cents}`);
      else if (o.kind !== "refund_other_body" && o.amountCents !== refund.amountCents)
        violations.push(`${what}: answered ${o.amountCents}, the app refunded ${refund.amountCents}`);
    }
    // A stored answer that says nothing was refunded: nothing may be refunded under its operation. (A refusal
    // before any claim stores nothing, so a later retry under its key may still refund: not checked.)
    const final =
      (o.status === 500 && o.code === "request_abandoned") || (o.status === 402 && o.code === "refund_declined");
    if (final && o.key !== null) {
      const made = listed.filter(
        (r) => r.metadata?.idempotencyKey === o.key && r.metadata?.apiClientId === String(clientIds[o.client]),
      );
      if (made.length > 0) violations.push(`${what}: answered ${o.code}, but the gateway refunded ${made[0]!.id}`);
    }
  }
  return { violations, gatewayRefunds: listed.length, appRefunds: appRefunds.length };
}
