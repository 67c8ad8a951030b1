import { queryRows } from "~/server/db";
import type { Refusal } from "~/server/operations/moneyOperation";
import type { HoldDecision } from "./holds";
import type { CreateRefundInput } from "./schema";

/**
 * Why a refund cannot be made (at the claim, an answer that stores nothing and leaves the key usable; in the
 * work, where the record exists, its stored answer): what the hold
 * decided under the charge's row lock (the rows of a claim's hold that declined), or, where the hold could not
 * see the charge at all (missing, another client's, not succeeded), what a read of it says.
 */
export async function refusalOfHold(
  apiClientId: number,
  input: CreateRefundInput,
  decision: HoldDecision | undefined,
): Promise<Refusal> {
  if (!decision || decision.charged === null) {
    return (await refusalFor(apiClientId, input)) ?? notFound(input);
  }
  return refusalForLeft(input, decision.charged - decision.refunded! - decision.held!) ?? notFound(input);
}

/**
 * The refusal a read of the charge shows, for a request whose claim holds nothing (a keyless refund): advisory,
 * since the limit itself is decided under the charge's row lock when the amount is held (holds.ts).
 */
export async function refusalFor(apiClientId: number, input: CreateRefundInput): Promise<Refusal | null> {
  // A plain read on the driver: on every keyless refund's path, where the ORM's own work showed (bench:overhead).
  const [charge] = await queryRows<{ api_client_id: number; status: string; left: number }>({
    sql: `SELECT api_client_id, status, amount_cents - amount_refunded_cents - refund_held_cents AS \`left\`
            FROM charges WHERE id = ?`,
    values: [input.charge],
  });
  // Another client's charge is indistinguishable from a missing one.
  if (!charge || charge.api_client_id !== apiClientId) return notFound(input);
  if (charge.status !== "succeeded") return { code: "charge_not_refundable" };
  return refusalForLeft(input, Number(charge.left));
}

function refusalForLeft(input: CreateRefundInput, left: number): Refusal | null {
  if (left <= 0) return { code: "charge_already_refunded" };
  if (input.amount_cents !== undefined && input.amount_cents > left) {
    const fields = { amount_cents: [`must be at most ${left}, what is left to refund on ${input.charge}`] };
    return { code: "invalid_request", details: { fields } };
  }
  return null;
}

const notFound = (input: CreateRefundInput): Refusal => ({ code: "not_found", message: `No charge ${input.charge}.` });
