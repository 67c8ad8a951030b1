import { createHash } from "node:crypto";
import type { RefundReason, StaffRefundIntention } from "~/generated/prisma/client";
import type { AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { DASHBOARD_KEY_PREFIX } from "~/server/http/idempotencyKeyHeader";
import { submitOperation } from "~/server/operations/submitOperation";
import { keepNote } from "./notes";
import { refundOperation } from "./refundOperation";
import { admitIntention, type Requester, requireSecondFactor } from "./staffIntentions";

export type DashboardRefund = {
  chargeId: string;
  /** What the page showed as already refunded when the person decided: part of the intention. */
  seenRefundedCents: number;
  /** Omitted: all that is left, as the page showed it. */
  amountCents?: number;
  reason: RefundReason;
  /** Why, in the person's words: kept with the refund (support reads it on the charge and its case), audited. */
  note: string;
};

/** The cases of double charges whose other half was refunded already: this refund is their override. */
export type BothHalves = { case: string; otherCharge: string | undefined }[];

/** What a dashboard refund came to: made (or found made), or waiting for a second person's approval. */
export type DashboardRefundResult =
  | { status: "refunded"; refundId: string; replayed: boolean }
  | { status: "awaiting_approval"; requestId: string };

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
 * new intention with a new key. The key is in the dashboard's own space (DASHBOARD_KEY_PREFIX), which the API
 * refuses from any client: knowing the charge, anyone can compute it, but no API client can take it first.
 */
export function intentionKey(refund: Pick<DashboardRefund, "chargeId" | "seenRefundedCents" | "amountCents">) {
  const material = ["dashboard-refund-v1", refund.chargeId, refund.seenRefundedCents, refund.amountCents ?? "rest"];
  return `${DASHBOARD_KEY_PREFIX}${createHash("sha256").update(material.join("\n")).digest("hex").slice(0, 40)}`;
}

/** How long a second click waits for the first's answer (Prefer: wait) instead of being told "in progress". */
const WAIT_SECONDS = 10;

/**
 * A refund from the dashboard: the person must have passed the second factor (when required), the intention is
 * written down within their limits (staffIntentions.ts), and one above the approval threshold waits for a second
 * person. Otherwise it is sent at once: the same idempotent operation as POST /api/refunds, for the charge's own API
 * client, under the intention's key (a double charge's two halves are guarded by src/server/doubleCharges). Its
 * note is kept with it, and a later confirm of the same intention (a second tab) is told it was already done, its
 * note kept too. The audit entry is written by the operation's completion, with the outcome
 * (src/server/audit/staffRefundAudit.ts).
 */
export async function refundFromDashboard(
  refund: DashboardRefund,
  user: Requester,
  context: AuditContext,
  bothHalves: BothHalves = [],
): Promise<DashboardRefundResult> {
  requireSecondFactor(user);
  const charge = await db.charge.findUnique({
    where: { id: refund.chargeId },
    select: { amountCents: true, currency: true },
  });
  if (!charge) throw new DomainError("not_found", `There is no charge ${refund.chargeId}.`);
  const amountCents = refund.amountCents ?? charge.amountCents - refund.seenRefundedCents;
  if (amountCents < 1) throw new DomainError("conflict", "Nothing is left to refund on this charge.");
  const override = bothHalves.length > 0 ? { override: "both halves of a double charge refunded", bothHalves } : {};
  const { intention } = await admitIntention(
    {
      key: intentionKey(refund),
      chargeId: refund.chargeId,
      amountCents,
      currency: charge.currency,
      reason: refund.reason,
      note: refund.note,
      details: override,
    },
    user,
    context,
  );
  if (intention.status === "awaiting_approval") return { status: "awaiting_approval", requestId: String(intention.id) };
  if (intention.status === "rejected") {
    throw new DomainError("conflict", `This refund was asked for before and rejected by ${intention.decidedByLabel}.`);
  }
  // A second confirm by someone else (another tab, another person) keeps its own words too.
  const kind = bothHalves.length > 0 ? "both_halves" : "refund";
  return sendIntention(intention, { context, note: refund.note, kind });
}

/**
 * Sends an admitted intention (submitted, or approved by a second person) as its refund operation, under its key:
 * any number of sends make one refund. The note is kept with the refund in the name of whoever `context` names.
 */
export async function sendIntention(
  intention: StaffRefundIntention,
  { context, note, kind }: { context: AuditContext; note: string; kind: "refund" | "both_halves" },
): Promise<DashboardRefundResult> {
  const charge = await db.charge.findUnique({ where: { id: intention.chargeId }, select: { apiClientId: true } });
  if (!charge) throw new DomainError("not_found", `There is no charge ${intention.chargeId}.`);
  const outcome = await submitOperation(refundOperation, {
    apiClientId: charge.apiClientId,
    body: { charge: intention.chargeId, amount_cents: intention.amountCents, reason: intention.reason },
    idempotencyKeyHeader: Buffer.from(intention.idempotencyKey).toString(),
    waitSeconds: WAIT_SECONDS,
    dashboard: true,
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
  await keepNote(
    { chargeId: intention.chargeId, refundId: body.id, kind: outcome.replayed ? "again" : kind, note },
    context,
  );
  return { status: "refunded", refundId: body.id, replayed: outcome.replayed };
}
