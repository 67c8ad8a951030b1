/**
 * A dashboard refund of a charge that may be half of a double charge: the guard first (pairGuard.ts: the other
 * half refunded needs the override; the first refund of a case claims it), then the refund itself
 * (src/server/refunds/fromDashboard.ts), whose refusal lets the claim go. A refund still in flight keeps it.
 */
import type { AuditContext } from "~/server/audit/audit";
import { type DashboardRefund, RefundInFlight, refundFromDashboard } from "~/server/refunds/fromDashboard";
import { guardPairRefund, release } from "./pairGuard";

export async function refundHalf(refund: DashboardRefund & { bothHalves?: boolean }, context: AuditContext) {
  const { bothHalves, ...asked } = refund;
  const guard = await guardPairRefund(asked.chargeId, bothHalves === true);
  const overridden = guard.overridden.map((c) => ({ case: c.key, otherCharge: c.other?.id }));
  try {
    return await refundFromDashboard(asked, context, overridden);
  } catch (error) {
    if (!(error instanceof RefundInFlight)) await release(asked.chargeId, guard.claimed);
    throw error;
  }
}
