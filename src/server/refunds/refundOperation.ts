import { queryRows } from "~/server/db";
import type { MoneyOperation, Refusal } from "~/server/operations/moneyOperation";
import { holdAtClaim } from "./holds";
import { refundOnGateway, settleRefund } from "./refundWork";
import { createRefundSchema, type CreateRefundInput } from "./schema";

/** The route name stored with every refund's record; part of the unique (key, route). */
export const REFUNDS_ROUTE = "POST /api/refunds";

/**
 * Refusals that need the charge, before any claim (nothing stored, the key stays usable). Advisory only: the
 * limit itself is decided under the charge's row lock when the amount is held (holds.ts).
 */
async function refusalFor(apiClientId: number, input: CreateRefundInput): Promise<Refusal | null> {
  // A plain read on the driver: on every refund's path, where the ORM's own work showed (bench:overhead).
  const [charge] = await queryRows<{ api_client_id: number; status: string; left: number }>({
    sql: `SELECT api_client_id, status, amount_cents - amount_refunded_cents - refund_held_cents AS \`left\`
            FROM charges WHERE id = ?`,
    values: [input.charge],
  });
  // Another client's charge is indistinguishable from a missing one.
  if (!charge || charge.api_client_id !== apiClientId)
    return { code: "not_found", message: `No charge ${input.charge}.` };
  if (charge.status !== "succeeded") return { code: "charge_not_refundable" };
  const left = Number(charge.left);
  if (left <= 0) return { code: "charge_already_refunded" };
  if (input.amount_cents !== undefined && input.amount_cents > left) {
    const fields = { amount_cents: [`must be at most ${left}, what is left to refund on ${input.charge}`] };
    return { code: "invalid_request", details: { fields } };
  }
  return null;
}

/** POST /api/refunds as the idempotency layer runs it. */
export const refundOperation: MoneyOperation<CreateRefundInput> = {
  route: REFUNDS_ROUTE,
  schema: createRefundSchema,
  shown: (body) => ({ customerId: null, fields: body }),
  precheck: refusalFor,
  atClaim: holdAtClaim,
  work: refundOnGateway,
  settle: settleRefund,
  unknownOutcome: "refund_outcome_unknown",
};
