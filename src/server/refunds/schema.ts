import { z } from "zod";

export const REFUND_REASONS = ["duplicate", "requested_by_customer", "fraudulent"] as const;

/** The body of POST /api/refunds (Stripe's shape). Unknown fields are rejected, as for charges. */
export const createRefundSchema = z.strictObject({
  charge: z.string({ error: "must be a string" }).regex(/^ch_[0-9a-f]{24}$/, "must be a charge id such as ch_..."),
  amount_cents: z
    .number({ error: "must be a number" })
    .int("must be a whole number of cents")
    .min(1, "must be at least 1")
    .max(99_999_999, "must be at most 99999999")
    .optional(),
  reason: z.enum(REFUND_REASONS, { error: `must be one of ${REFUND_REASONS.join(", ")}` }).optional(),
});

export type CreateRefundInput = z.infer<typeof createRefundSchema>;
