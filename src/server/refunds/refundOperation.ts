import type { MoneyOperation } from "~/server/operations/moneyOperation";
import { holdAtClaim, type HoldDecision } from "./holds";
import { refundOnGateway, settleRefund } from "./refundWork";
import { refusalFor, refusalOfHold } from "./refusals";
import { createRefundSchema, type CreateRefundInput } from "./schema";

/** The route name stored with every refund's record; part of the unique (key, route). */
export const REFUNDS_ROUTE = "POST /api/refunds";

/** POST /api/refunds as the idempotency layer runs it. */
export const refundOperation: MoneyOperation<CreateRefundInput> = {
  route: REFUNDS_ROUTE,
  schema: createRefundSchema,
  shown: (body) => ({ customerId: null, fields: body }),
  precheck: refusalFor,
  // A keyed refund's hold is made with its record and decides its refusals under the charge's row lock.
  atClaim: holdAtClaim,
  refusal: (apiClientId, input, rows) => refusalOfHold(apiClientId, input, rows[0] as HoldDecision | undefined),
  work: refundOnGateway,
  settle: settleRefund,
  unknownOutcome: "refund_outcome_unknown",
};
