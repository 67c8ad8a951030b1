import type { Charge } from "~/generated/prisma/client";
import { abandonedBody, type GatewayTrace } from "~/server/http/abandonedAnswer";
import { errorBody } from "~/server/http/apiError";
import { API_ERRORS } from "@charges/client/errorRegistry";
import type { StoredResponse } from "~/server/idempotency";

/** The public JSON shape of a charge (also used by GET /api/charges/[id], with its refunds, serialized). */
export function serializeCharge(charge: Charge, refunds: unknown[] = []) {
  return {
    id: charge.id,
    object: "charge",
    amount_cents: charge.amountCents,
    currency: charge.currency,
    status: charge.status,
    customer_id: charge.customerId,
    failure_code: charge.failureCode,
    gateway_charge_id: charge.gatewayChargeId,
    amount_refunded_cents: charge.amountRefundedCents,
    refunds,
    requested_at: charge.requestedAt.toISOString(),
    created_at: charge.createdAt.toISOString(),
  };
}

/** What a finished charge answers: 201 with the charge, or 402 card_declined. */
export function responseForCharge(charge: Charge): StoredResponse {
  if (charge.status === "succeeded") return { status: 201, body: JSON.stringify(serializeCharge(charge)) };
  return {
    status: 402,
    body: errorBody("card_declined", API_ERRORS.card_declined.message, {
      decline_code: charge.failureCode,
      charge: charge.id,
    }),
  };
}

/** The stored answer of an operation the sweeper found the gateway never charged, naming what the gateway showed. */
export const abandonedResponse = (trace: GatewayTrace): StoredResponse => ({
  status: API_ERRORS.request_abandoned.status,
  body: abandonedBody(trace),
});
