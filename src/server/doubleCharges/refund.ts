/**
 * A dashboard refund of a charge that may be half of a double charge: the guard first (pairGuard.ts: the other
 * half refunded needs the override; the first refund of a case claims it), then the refund itself
 * (src/server/refunds/fromDashboard.ts), whose refusal lets the claim go. A refund still in flight keeps it; one
 * awaiting a second person's approval lets it go too, and is guarded again when it is approved (approveRefund).
 */
import type { AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import {
  type DashboardRefund,
  type DashboardRefundResult,
  RefundInFlight,
  refundFromDashboard,
  sendIntention,
} from "~/server/refunds/fromDashboard";
import { decide, type Requester, requireSecondFactor } from "~/server/refunds/staffIntentions";
import { guardPairRefund, release } from "./pairGuard";

export async function refundHalf(
  refund: DashboardRefund & { bothHalves?: boolean },
  user: Requester,
  context: AuditContext,
): Promise<DashboardRefundResult> {
  const { bothHalves, ...asked } = refund;
  requireSecondFactor(user);
  const guard = await guardPairRefund(asked.chargeId, bothHalves === true);
  const overridden = guard.overridden.map((c) => ({ case: c.key, otherCharge: c.other?.id }));
  try {
    const result = await refundFromDashboard(asked, user, context, overridden);
    if (result.status === "awaiting_approval") await release(asked.chargeId, guard.claimed);
    return result;
  } catch (error) {
    if (!(error instanceof RefundInFlight)) await release(asked.chargeId, guard.claimed);
    throw error;
  }
}

/**
 * A second person approves a refund request: the decision is written (never by the requester), then the refund is
 * sent under the request's key, guarded as a double charge's half would be at that moment (an override the
 * requester asked for is honoured). Approving again sends again, which makes nothing twice.
 */
export async function approveRefund(id: bigint, user: Requester, context: AuditContext) {
  requireSecondFactor(user);
  const decided = await decide(id, { approve: true }, user, context);
  const asked = JSON.parse(decided.details ?? "{}") as { override?: string };
  const guard = await guardPairRefund(decided.chargeId, asked.override !== undefined);
  const overridden = guard.overridden.map((c) => ({ case: c.key, otherCharge: c.other?.id }));
  if (overridden.length > 0 && asked.override === undefined) {
    await release(decided.chargeId, guard.claimed);
    throw new DomainError("conflict", "The other half of this double charge was refunded since this was asked for.");
  }
  // The refund's note is the requester's words, kept in their name.
  const requester: AuditContext = {
    actor: { type: "staff", id: decided.requestedByStaffId, email: decided.requestedByLabel },
    request: context.request,
  };
  try {
    const kind = overridden.length > 0 ? "both_halves" : "refund";
    return await sendIntention(decided, { context: requester, note: decided.note, kind });
  } catch (error) {
    if (!(error instanceof RefundInFlight)) await release(decided.chargeId, guard.claimed);
    throw error;
  }
}

/** A second person refuses a refund request: nothing is sent, ever, under its key. */
export async function rejectRefund(id: bigint, note: string, user: Requester, context: AuditContext) {
  await decide(id, { approve: false, note }, user, context);
  return db.staffRefundIntention.findUniqueOrThrow({ where: { id }, select: { status: true } });
}
