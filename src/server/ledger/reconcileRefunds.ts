/**
 * The refunds' side of the reconciliation: the gateway's refund list for a window compared with the app's
 * refunds, as reconcile.ts compares charges. Finds a gateway refund the app does not know, an app refund the
 * gateway does not have, a different amount, more than one gateway refund for one operation, and a charge whose
 * refunds exceed it or do not add up to its refunded amount. Repairs what it can prove: a gateway refund whose
 * derived key names a record nobody is finishing is settled as the sweeper would, and one that landed after its
 * operation was written off is recorded (recordLateRefund.ts).
 */
import type { Refund } from "~/generated/prisma/client";
import { db, queryRows } from "~/server/db";
import { gateway, type ListedGatewayRefund } from "~/server/gateway";
import { finishUnfinished } from "~/server/idempotency";
import { settleRecord } from "~/server/moneyRoutes";
import { ownerOf } from "./owner";
import { recordLateRefund } from "./recordLateRefund";
import type { Finding } from "./finding";

export type RefundReconciliation = {
  gatewayRefunds: number;
  appRefunds: number;
  repaired: number;
  findings: Finding[];
  /** Subjects found in order (kind, subject), so that earlier findings about them are resolved. */
  inOrder: Pick<Finding, "kind" | "subject">[];
};

const PAGE = 100;

function compare(listed: ListedGatewayRefund, app: Refund): Finding | null {
  if (listed.amountCents === app.amountCents && listed.id === app.gatewayRefundId) return null;
  return {
    kind: "refund_amount_mismatch",
    subject: listed.id,
    gatewayChargeId: listed.id,
    chargeId: app.chargeId,
    requestId: app.idempotentRequestId ?? undefined,
    evidence: {
      gateway: { id: listed.id, amount_cents: listed.amountCents },
      app: { id: app.id, gateway_refund_id: app.gatewayRefundId, amount_cents: app.amountCents },
    },
  };
}

/** A gateway refund the app has no row for: settled when its record is unfinished, else a finding. */
async function settleOrphan(refund: ListedGatewayRefund): Promise<"repaired" | "in_flight" | "in_order" | Finding> {
  const record = await ownerOf(refund);
  const finding = (why: string): Finding => ({
    kind: "gateway_refund_without_app_refund",
    subject: refund.id,
    gatewayChargeId: refund.id,
    requestId: record?.id,
    evidence: {
      why,
      gateway: { id: refund.id, charge: refund.chargeId, amount_cents: refund.amountCents, key: refund.idempotencyKey },
    },
  });
  if (!record) return finding("its metadata names no record of this app whose derived key is the refund's key");
  switch (record.phase.name) {
    case "held":
      return "in_flight";
    case "complete": {
      const recorded = await db.refund.findUnique({ where: { gatewayIdempotencyKey: refund.idempotencyKey } });
      if (recorded) return compare(refund, recorded) ?? "in_order";
      if (record.phase.finishedBy !== "abandoned") return finding("the record completed without it");
      // Refunded after the operation was answered "no refund was made": recorded (it cannot be undone), its answer
      // corrected, and reported for a person: the client, told otherwise, may have refunded again.
      const late = await recordLateRefund(record, refund);
      if (!late) return finding("refunded after its operation was written off; it does not fit the charge yet");
      return {
        kind: "refund_after_write_off",
        subject: refund.id,
        gatewayChargeId: refund.id,
        chargeId: late.chargeId,
        requestId: record.id,
        evidence: {
          why:
            "refunded at the gateway after the client was answered 'no refund was made' (500 request_abandoned); " +
            "recorded as the operation's refund and its answer corrected: check whether the client refunded again",
          written_off_at: record.updatedAt.toISOString(),
          gateway: { id: refund.id, charge: refund.chargeId, amount_cents: refund.amountCents },
          refund: late.id,
        },
      };
    }
    case "released":
    case "lease_expired": {
      const result = await finishUnfinished(record, settleRecord);
      return result.kind === "finished" ? "repaired" : "in_flight";
    }
  }
}

/** Two gateway refunds naming one record are one operation refunded twice. */
function doubleRefunds(refunds: ListedGatewayRefund[]): Finding[] {
  const byRecord = new Map<string, ListedGatewayRefund[]>();
  for (const r of refunds) {
    const id = r.metadata?.requestId;
    if (id) byRecord.set(id, [...(byRecord.get(id) ?? []), r]);
  }
  return [...byRecord.values()].flatMap((group) =>
    group.slice(1).map((second) => ({
      kind: "several_gateway_refunds_for_one_operation" as const,
      subject: second.id,
      gatewayChargeId: second.id,
      evidence: {
        request_id: second.metadata!.requestId,
        refunds: group.map((r) => ({ id: r.id, key: r.idempotencyKey, created_at: r.createdAt.toISOString() })),
      },
    })),
  );
}

/** Charges refunded in the window whose refunds (made and held) exceed them, or do not add up. */
async function chargesOverRefunded(window: { since: Date; until: Date }): Promise<Finding[]> {
  const rows = await queryRows<{ id: string; amount: number; refunded: number; held: number; sum: number }>({
    sql: `SELECT c.id, c.amount_cents AS amount, c.amount_refunded_cents AS refunded, c.refund_held_cents AS held,
                 CAST((SELECT COALESCE(SUM(r.amount_cents), 0) FROM refunds r WHERE r.charge_id = c.id) AS INT) AS sum
            FROM charges c
           WHERE c.id IN (SELECT charge_id FROM refunds WHERE created_at >= ? AND created_at < ?)
          HAVING refunded + held > amount OR refunded <> sum`,
    values: [window.since, window.until],
  });
  return rows.map((c) => ({
    kind: "refunds_exceed_charge",
    subject: c.id,
    chargeId: c.id,
    evidence: {
      charge: c.id,
      amount_cents: c.amount,
      refunded_cents: c.refunded,
      held_cents: c.held,
      sum_cents: c.sum,
    },
  }));
}

/** App refunds of the window whose gateway refund the list did not show: asked of the gateway one by one. */
async function appRefundsWithoutGatewayRefund(window: { since: Date; until: Date }, seenKeys: Set<string>) {
  const findings: Finding[] = [];
  const inOrder: Pick<Finding, "kind" | "subject">[] = [];
  const refunds = await db.refund.findMany({
    where: { createdAt: { gte: window.since, lt: window.until } },
    include: { charge: { select: { gatewayChargeId: true } } },
  });
  for (const refund of refunds) {
    const subject = { kind: "app_refund_without_gateway_refund" as const, subject: refund.id };
    if (seenKeys.has(refund.gatewayIdempotencyKey)) {
      inOrder.push(subject);
      continue;
    }
    // Its gateway refund may be just outside the window (the app row is written after the gateway answered).
    const lookup = await gateway.findRefund({
      idempotencyKey: refund.gatewayIdempotencyKey,
      chargeId: refund.charge.gatewayChargeId,
    });
    if (lookup.kind === "refunded") inOrder.push(subject);
    else if (lookup.kind === "not_refunded") {
      findings.push({
        ...subject,
        chargeId: refund.chargeId,
        requestId: refund.idempotentRequestId ?? undefined,
        evidence: {
          why: "the gateway has no refund under its key",
          app: { id: refund.id, amount_cents: refund.amountCents },
        },
      });
    }
  }
  return { count: refunds.length, findings, inOrder };
}

export async function reconcileRefunds(window: { since: Date; until: Date }): Promise<RefundReconciliation> {
  const findings: Finding[] = [];
  const inOrder: Pick<Finding, "kind" | "subject">[] = [];
  const listed: ListedGatewayRefund[] = [];
  let repaired = 0;
  let cursor: string | undefined;
  do {
    const page = await gateway.listRefunds({ ...window, cursor, limit: PAGE });
    listed.push(...page.refunds);
    const app = await db.refund.findMany({
      where: { gatewayIdempotencyKey: { in: page.refunds.map((r) => r.idempotencyKey) } },
    });
    const byKey = new Map(app.map((r) => [r.gatewayIdempotencyKey, r]));
    for (const refund of page.refunds) {
      const own = byKey.get(refund.idempotencyKey);
      const settled = own ? compare(refund, own) : await settleOrphan(refund);
      if (settled === "repaired") repaired += 1;
      else if (settled === null || settled === "in_order") {
        inOrder.push({ kind: "gateway_refund_without_app_refund", subject: refund.id });
        inOrder.push({ kind: "refund_amount_mismatch", subject: refund.id });
      } else if (settled !== "in_flight") findings.push(settled);
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  findings.push(...doubleRefunds(listed));
  const app = await appRefundsWithoutGatewayRefund(window, new Set(listed.map((r) => r.idempotencyKey)));
  findings.push(...app.findings, ...(await chargesOverRefunded(window)));
  inOrder.push(...app.inOrder);
  return { gatewayRefunds: listed.length, appRefunds: app.count, repaired, findings, inOrder };
}
