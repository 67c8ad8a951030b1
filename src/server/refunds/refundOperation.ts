import type { MoneyOperation } from "~/server/operations/moneyOperation";
import { holdAtClaim, type HoldDecision } from "./holds";
import { refundOnGateway, settleRefund } from "./refundWork";
import { refusalFor, refusalOfHold } from "./refusals";
import { createRefundSchema, type CreateRefundInput } from "./schema";
import { REFUND_EXAMPLES } from "./examples";

/** The route name stored with every refund's record; part of the unique (key, route). */
export const REFUNDS_ROUTE = "POST /api/refunds";

/** POST /api/refunds as the idempotency layer runs it. */
export const refundOperation: MoneyOperation<CreateRefundInput> = {
  route: REFUNDS_ROUTE,
  schema: createRefundSchema,
  shown: (body) => ({ customerId: null, fields: body }),
  precheck: refusalFor,
  // A keyed refund's hold is made with its record and decides its refusals under the charge's row lock.
  declines: {
    atClaim: holdAtClaim,
    refusal: (apiClientId, input, rows) => refusalOfHold(apiClientId, input, rows[0] as HoldDecision | undefined),
  },
  work: refundOnGateway,
  settle: settleRefund,
  unknownOutcome: "refund_outcome_unknown",
  moneyTable: "refunds",
  doc: {
    object: "Refund",
    summary: "Refund a charge",
    description:
      "Refunds one of your succeeded charges: `amount_cents` of it, or without it all that is left. Never more " +
      "than was charged, also when refunds with different keys race: each holds its amount on the charge before " +
      "the gateway is called. One gateway refund per Idempotency-Key, however often the request is retried. A " +
      "refusal (an unknown or declined charge, nothing or too little left) stores nothing, also when it loses a " +
      "race for what was left: the key stays usable.",
    created: "Refunded.",
    errors: [
      "not_found",
      "charge_not_refundable",
      "charge_already_refunded",
      "refund_in_progress",
      "refund_declined",
      "refund_outcome_unknown",
    ],
    examples: REFUND_EXAMPLES,
  },
};
