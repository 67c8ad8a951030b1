import type { Refund } from "~/generated/prisma/client";
import { abandonedBody } from "~/server/http/abandonedAnswer";
import { errorBody } from "~/server/http/apiError";
import { API_ERRORS } from "@charges/client/errorRegistry";
import type { StoredResponse } from "~/server/idempotency";

/** The public JSON shape of a refund (POST /api/refunds, GET /api/refunds/[id], a charge's `refunds`). */
export function serializeRefund(refund: Refund) {
  return {
    id: refund.id,
    object: "refund",
    charge: refund.chargeId,
    amount_cents: refund.amountCents,
    currency: refund.currency,
    status: "succeeded",
    reason: refund.reason,
    gateway_refund_id: refund.gatewayRefundId,
    created_at: refund.createdAt.toISOString(),
  };
}

/**
 * A refund the gateway refused, as its refund.failed event shows it: no refund row exists (nothing was refunded),
 * so it has no id; what was asked, of which charge, and the gateway's code.
 */
export function failedRefundObject(
  hold: { chargeId: string; amountCents: number; currency: string; reason: Refund["reason"] },
  code: string,
) {
  return {
    id: null,
    object: "refund",
    charge: hold.chargeId,
    amount_cents: hold.amountCents,
    currency: hold.currency,
    status: "failed",
    reason: hold.reason,
    failure_code: code,
  };
}

export const responseForRefund = (refund: Refund): StoredResponse => ({
  status: 201,
  body: JSON.stringify(serializeRefund(refund)),
});

export const declinedRefundResponse = (code: string): StoredResponse => ({
  status: 402,
  body: errorBody("refund_declined", API_ERRORS.refund_declined.message, { decline_code: code }),
});

/**
 * The stored answer of a refund operation the sweeper found the gateway never carried out: no hold (it never got
 * to the gateway), or none in the gateway's refund list (strongly consistent): no trace there either way.
 */
export const abandonedRefundResponse: StoredResponse = {
  status: 500,
  body: abandonedBody({ kind: "no_trace" }, "refund"),
};
