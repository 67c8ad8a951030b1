import { z } from "zod";
import { GatewayOutcomeUnknownError, type GatewayCharge, type GatewayChargeRequest, type PaymentGateway } from "./types";

const chargeSchema = z.object({
  id: z.string(),
  status: z.enum(["succeeded", "declined"]),
  amount_cents: z.number().int(),
  currency: z.string(),
  customer_id: z.string().nullable(),
  decline_code: z.string().nullable(),
  message: z.string().nullable(),
});

function toGatewayCharge(json: unknown): GatewayCharge {
  const c = chargeSchema.parse(json);
  return {
    id: c.id,
    status: c.status,
    amountCents: c.amount_cents,
    currency: c.currency,
    customerId: c.customer_id,
    declineCode: c.decline_code,
    message: c.message,
  };
}

/** A gateway reached over HTTP with the simulated gateway's wire format. */
export class HttpPaymentGateway implements PaymentGateway {
  constructor(private readonly baseUrl: string) {}

  async charge(request: GatewayChargeRequest, { idempotencyKey, timeoutMs }: { idempotencyKey: string; timeoutMs: number }) {
    let response: Response;
    try {
      response = await fetch(new URL("/v1/charges", this.baseUrl), {
        method: "POST",
        headers: { "Content-Type": "application/json", "Idempotency-Key": idempotencyKey },
        body: JSON.stringify({
          amount_cents: request.amountCents,
          currency: request.currency,
          card_token: request.cardToken,
          customer_id: request.customerId,
        }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new GatewayOutcomeUnknownError(`gateway unreachable or too slow: ${String(error)}`, { cause: error });
    }
    // Both a charge and a decline are definite answers; anything else is not.
    if (response.status === 200 || response.status === 402) return toGatewayCharge(await response.json());
    throw new GatewayOutcomeUnknownError(`gateway answered ${response.status}: ${await response.text().catch(() => "")}`);
  }

  async findByIdempotencyKey(idempotencyKey: string) {
    const url = new URL(`/v1/charges/by-idempotency-key/${encodeURIComponent(idempotencyKey)}`, this.baseUrl);
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`gateway lookup answered ${response.status}`);
    return toGatewayCharge(await response.json());
  }
}
