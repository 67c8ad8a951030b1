import type { Charge } from "~/generated/prisma/client";
import { errorBody } from "~/server/http/apiError";
import type { StoredResponse } from "~/server/idempotency/store";

/** The public JSON shape of a charge (also used by GET /api/charges/[id]). */
export function serializeCharge(charge: Charge) {
  return {
    id: charge.id,
    object: "charge",
    amount_cents: charge.amountCents,
    currency: charge.currency,
    status: charge.status,
    customer_id: charge.customerId,
    failure_code: charge.failureCode,
    gateway_charge_id: charge.gatewayChargeId,
    created_at: charge.createdAt.toISOString(),
  };
}

/** What a finished charge answers: 201 with the charge, or 402 card_declined. */
export function responseForCharge(charge: Charge): StoredResponse {
  if (charge.status === "succeeded") return { status: 201, body: JSON.stringify(serializeCharge(charge)) };
  return {
    status: 402,
    body: errorBody("card_declined", "The card was declined.", {
      decline_code: charge.failureCode,
      charge: charge.id,
    }),
  };
}
