import { z } from "zod";

/**
 * The body of POST /api/charges. Unknown fields are rejected rather than
 * ignored, so a typo never turns into a silently different charge.
 */
export const createChargeSchema = z.strictObject({
  amount_cents: z
    .number({ error: "must be a number" })
    .int("must be a whole number of cents")
    .min(1, "must be at least 1")
    .max(99_999_999, "must be at most 99999999"),
  currency: z
    .string({ error: "must be a string" })
    .regex(/^[A-Za-z]{3}$/, "must be a three-letter ISO 4217 code, e.g. usd")
    .transform((c) => c.toLowerCase()),
  card_token: z
    .string({ error: "must be a string" })
    .regex(/^tok_[A-Za-z0-9_]{1,60}$/, "must be a card token such as tok_visa"),
  customer_id: z
    .string({ error: "must be a string" })
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 letters, digits, '_' or '-'")
    .nullish()
    .transform((c) => c ?? null),
});

export type CreateChargeInput = z.infer<typeof createChargeSchema>;

/** Fields never stored beside a record: a card token is as good as the card to whoever holds it. */
const SECRET_FIELDS = new Set(["card_token"]);

/**
 * A valid body's top-level fields as the client sent them, less the secret
 * ones: what the dashboard shows as "what was asked", and compares with a reuse
 * of the key. Kept as sent (not normalised) because the request hash is of the
 * body as sent, so that a reuse's difference is one these fields show.
 */
export function fieldsToShow(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([name]) => !SECRET_FIELDS.has(name)));
}
