import { queryRows } from "~/server/db";
import type { Refusal } from "~/server/operations/moneyOperation";
import type { HoldDecision } from "./holds";
import type { CreateRefundInput } from "./schema";

/**
 * Why a refund cannot be made (an answer that stores nothing and leaves the key usable): what the hold read under
 * the charge's row lock (the rows of a hold that declined, at the claim or in the work), or, where the hold could
 * not see the charge at all (missing, another client's, not succeeded), what a read of it says.
 */
export async function refusalOfHold(
  apiClientId: number,
  input: CreateRefundInput,
  decision: HoldDecision | undefined,
): Promise<Refusal> {
  if (!decision || decision.charged === null) {
    return (await refusalFor(apiClientId, input)) ?? notFound(input);
  }
  const amounts = { charged: decision.charged, refunded: decision.refunded!, held: decision.held! };
  return refusalForAmounts(input, amounts) ?? notFound(input);
}

/**
 * The refusal a read of the charge shows, for a request whose claim holds nothing (a keyless refund): advisory,
 * since the limit itself is decided under the charge's row lock when the amount is held (holds.ts).
 */
export async function refusalFor(apiClientId: number, input: CreateRefundInput): Promise<Refusal | null> {
  // A plain read on the driver: on every keyless refund's path, where the ORM's own work showed (bench:overhead).
  const [charge] = await queryRows<{
    api_client_id: number;
    status: string;
    charged: number;
    refunded: number;
    held: number;
  }>({
    sql: `SELECT api_client_id, status, amount_cents AS charged, amount_refunded_cents AS refunded,
                 refund_held_cents AS held
            FROM charges WHERE id = ?`,
    values: [input.charge],
  });
  // Another client's charge is indistinguishable from a missing one.
  if (!charge || charge.api_client_id !== apiClientId) return notFound(input);
  if (charge.status !== "succeeded") return { code: "charge_not_refundable" };
  return refusalForAmounts(input, { charged: charge.charged, refunded: charge.refunded, held: charge.held });
}

type Amounts = { charged: number; refunded: number; held: number };

/**
 * The one rule of what a refund is told when it does not fit, from the charge's amounts: "already refunded" only
 * of money refunded; a refund that would fit once the refunds in flight end is told to retry (they may fail and
 * give their amount back); one larger than the charge's unrefunded rest can never fit.
 */
export function refusalForAmounts(input: CreateRefundInput, amounts: Amounts): Refusal | null {
  const [charged, refunded, held] = [amounts.charged, amounts.refunded, amounts.held].map(Number) as [
    number,
    number,
    number,
  ];
  const unrefunded = charged - refunded;
  if (unrefunded <= 0) return { code: "charge_already_refunded" };
  const free = unrefunded - held;
  // Without an amount the refund is "all that is left": the free part, or, while refunds in flight hold all of
  // it, whatever they give back.
  const wanted = input.amount_cents ?? (free > 0 ? free : unrefunded);
  if (wanted > unrefunded) {
    const fields = { amount_cents: [`must be at most ${unrefunded}, what is left to refund on ${input.charge}`] };
    return { code: "invalid_request", details: { fields } };
  }
  if (wanted > free) return { code: "refund_in_progress", details: { held_cents: held } };
  return null;
}

const notFound = (input: CreateRefundInput): Refusal => ({ code: "not_found", message: `No charge ${input.charge}.` });
