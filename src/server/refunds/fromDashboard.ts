import { createHash } from "node:crypto";
import type { RefundReason } from "~/generated/prisma/client";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { submitOperation } from "~/server/operations/submitOperation";
import { keepNote } from "./notes";
import { refundOperation } from "./refundOperation";

export type DashboardRefund = {
  chargeId: string;
  /** What the page showed as already refunded when the person decided: part of the intention. */
  seenRefundedCents: number;
  /** Omitted: all that is left. */
  amountCents?: number;
  reason: RefundReason;
  /** Why, in the person's words: kept with the refund (support reads it on the charge and its case), audited. */
  note: string;
};

/** The cases of double charges whose other half was refunded already: this refund is their override. */
export type BothHalves = { case: string; otherCharge: string | undefined }[];

/** The refund is still being made (the operation is in flight): it may yet succeed. */
export class RefundInFlight extends DomainError {
  constructor() {
    super("conflict", "This refund is still being made; look again in a moment.");
  }
}

/**
 * The Idempotency-Key of one refund intention: this charge, as the page showed it, by this amount. A double
 * click, a retry after a network error and a second tab showing the same charge all send the same key, so they
 * name one operation and refund once; after it, the page shows a new refunded amount, and a further refund is a
 * new intention with a new key.
 */
export function intentionKey(refund: Pick<DashboardRefund, "chargeId" | "seenRefundedCents" | "amountCents">) {
  const material = ["dashboard-refund-v1", refund.chargeId, refund.seenRefundedCents, refund.amountCents ?? "rest"];
  return `dash_${createHash("sha256").update(material.join("\n")).digest("hex").slice(0, 40)}`;
}

/** How long a second click waits for the first's answer (Prefer: wait) instead of being told "in progress". */
const WAIT_SECONDS = 10;

/**
 * A refund from the dashboard: the same idempotent operation as POST /api/refunds, for the charge's own API
 * client, under the intention's key (a double charge's two halves are guarded by src/server/doubleCharges). Its
 * note is kept with it, and a later confirm of the same intention (a second tab) is told it was already done, its
 * note kept too. Audited with the person and their note when it moved money, as an override when `bothHalves`
 * names cases whose other half was refunded.
 */
export async function refundFromDashboard(refund: DashboardRefund, context: AuditContext, bothHalves: BothHalves = []) {
  const charge = await db.charge.findUnique({ where: { id: refund.chargeId }, select: { apiClientId: true } });
  if (!charge) throw new DomainError("not_found", `There is no charge ${refund.chargeId}.`);
  const key = intentionKey(refund);
  const outcome = await submitOperation(refundOperation, {
    apiClientId: charge.apiClientId,
    body: { charge: refund.chargeId, amount_cents: refund.amountCents, reason: refund.reason },
    idempotencyKeyHeader: key,
    waitSeconds: WAIT_SECONDS,
  });
  if (outcome.kind === "in_progress") throw new RefundInFlight();
  if (outcome.kind === "error") {
    const fields = (outcome.details?.fields ?? {}) as Record<string, string[]>;
    const why = [outcome.message ?? outcome.code, ...Object.entries(fields).map(([f, m]) => `${f} ${m.join(", ")}`)];
    throw new DomainError(outcome.code === "not_found" ? "not_found" : "conflict", why.join(": "));
  }
  const body = JSON.parse(outcome.response.body) as { id?: string; error?: { code: string; message: string } };
  if (outcome.response.status !== 201 || !body.id) {
    const why = body.error?.message ?? `The refund was answered ${outcome.response.status}.`;
    throw new DomainError("conflict", why);
  }
  const kind = outcome.replayed ? "again" : bothHalves.length > 0 ? "both_halves" : "refund";
  await keepNote({ chargeId: refund.chargeId, refundId: body.id, kind, note: refund.note }, context);
  if (!outcome.replayed) {
    await recordAudit(context, {
      action: "refund.created",
      target: { type: "charge", id: refund.chargeId },
      details: {
        refund: body.id,
        reason: refund.reason,
        note: refund.note,
        key,
        ...(bothHalves.length > 0 ? { override: "both halves of a double charge refunded", bothHalves } : {}),
      },
    });
  }
  return { refundId: body.id, replayed: outcome.replayed };
}
