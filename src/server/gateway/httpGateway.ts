import { z } from "zod";
import {
  GatewayOutcomeUnknownError,
  GatewayRefusedError,
  type GatewayRefund,
  type GatewayRefundRequest,
  type ListedGatewayRefund,
  type RefundLookup,
  type ChargeListWindow,
  type ChargeMetadata,
  type ChargeOptions,
  type GatewayCharge,
  type GatewayChargeRequest,
  type GatewayLookup,
  type ListedGatewayCharge,
  type PaymentGateway,
} from "./types";

const chargeSchema = z.object({
  id: z.string(),
  status: z.enum(["succeeded", "declined"]),
  amount_cents: z.number().int(),
  currency: z.string(),
  customer_id: z.string().nullable(),
  decline_code: z.string().nullable(),
  message: z.string().nullable(),
});

const listedSchema = chargeSchema.extend({
  idempotency_key: z.string(),
  created_at: z.iso.datetime(),
  metadata: z
    .object({ request_id: z.string(), api_client_id: z.string(), idempotency_key: z.string().nullable() })
    .nullable(),
});

/** The lookup's 404: no charge under the key, and the refusal of a request under it, if any. */
const notFoundSchema = z.object({ refused: z.object({ code: z.string() }).optional() });

const listSchema = z.object({ data: z.array(listedSchema), next_cursor: z.string().nullable() });

const metadataSchema = z
  .object({ request_id: z.string(), api_client_id: z.string(), idempotency_key: z.string().nullable() })
  .nullable();

const refundSchema = z.object({
  id: z.string(),
  charge: z.string(),
  amount_cents: z.number().int(),
  currency: z.string(),
  idempotency_key: z.string().nullable(),
  created_at: z.iso.datetime(),
  metadata: metadataSchema,
});

const refundListSchema = z.object({ data: z.array(refundSchema), next_cursor: z.string().nullable() });

function toRefund(r: z.infer<typeof refundSchema>): GatewayRefund {
  return { id: r.id, chargeId: r.charge, amountCents: r.amount_cents, currency: r.currency };
}

function toListedRefund(r: z.infer<typeof refundSchema>): ListedGatewayRefund {
  return {
    ...toRefund(r),
    idempotencyKey: r.idempotency_key ?? "",
    createdAt: new Date(r.created_at),
    metadata: toMetadata(r.metadata),
  };
}

function toMetadata(m: z.infer<typeof metadataSchema>): ChargeMetadata | null {
  return m ? { requestId: m.request_id, apiClientId: m.api_client_id, idempotencyKey: m.idempotency_key } : null;
}

const wireMetadata = (m: ChargeMetadata) => ({
  request_id: m.requestId,
  api_client_id: m.apiClientId,
  idempotency_key: m.idempotencyKey,
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

function toListed(c: z.infer<typeof listedSchema>): ListedGatewayCharge {
  const metadata = toMetadata(c.metadata);
  return { ...toGatewayCharge(c), idempotencyKey: c.idempotency_key, createdAt: new Date(c.created_at), metadata };
}

/** A gateway reached over HTTP with the simulated gateway's wire format. */
export class HttpPaymentGateway implements PaymentGateway {
  /** Charge-Not-After: the simulator refuses, in the transaction that would move the money, what comes later. */
  readonly lateLandingMs = 0;

  constructor(private readonly baseUrl: string) {}

  async identity(): Promise<string> {
    const res = await fetch(new URL("/v1/identity", this.baseUrl), { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`gateway identity: HTTP ${res.status}`);
    return z.object({ id: z.string() }).parse(await res.json()).id;
  }

  /** A POST under the idempotency key, bounded by the timeout; no answer at all is an unknown outcome. */
  private async post(path: string, body: unknown, { idempotencyKey, timeoutMs, notAfter }: ChargeOptions) {
    try {
      return await fetch(new URL(path, this.baseUrl), {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "Idempotency-Key": idempotencyKey,
          ...(notAfter ? { "Charge-Not-After": notAfter.toISOString() } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new GatewayOutcomeUnknownError(`gateway unreachable or too slow: ${String(error)}`, { cause: error });
    }
  }

  async charge(request: GatewayChargeRequest, options: ChargeOptions) {
    const response = await this.post(
      "/v1/charges",
      {
        amount_cents: request.amountCents,
        currency: request.currency,
        card_token: request.cardToken,
        customer_id: request.customerId,
        metadata: wireMetadata(request.metadata),
      },
      options,
    );
    // Both a charge and a decline are definite answers; anything else is not (410 request_expired, a request
    // that arrived after its not-after time, charged nothing, but only clock skew lets its sender see it).
    if (response.status === 200 || response.status === 402) return toGatewayCharge(await response.json());
    throw new GatewayOutcomeUnknownError(
      `gateway answered ${response.status}: ${await response.text().catch(() => "")}`,
    );
  }

  /**
   * The simulator's lookup by key reads its own table: a miss is a proof. Its 404 names a refusal under the
   * key (a request carried out after its Charge-Not-After), if there was one.
   */
  async findCharge({ idempotencyKey }: { idempotencyKey: string }): Promise<GatewayLookup> {
    const url = new URL(`/v1/charges/by-idempotency-key/${encodeURIComponent(idempotencyKey)}`, this.baseUrl);
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (response.status === 404) {
      const { refused } = notFoundSchema.parse(await response.json().catch(() => ({})));
      return { kind: "not_charged", refused: refused?.code ?? null };
    }
    if (!response.ok) throw new Error(`gateway lookup answered ${response.status}`);
    return { kind: "charged", charge: toGatewayCharge(await response.json()) };
  }

  async refund(request: GatewayRefundRequest, options: ChargeOptions) {
    const response = await this.post(
      "/v1/refunds",
      { charge: request.chargeId, amount_cents: request.amountCents, metadata: wireMetadata(request.metadata) },
      options,
    );
    if (response.status === 200) return toRefund(refundSchema.parse(await response.json()));
    const text = await response.text().catch(() => "");
    // A definite no (nothing left, no such charge) moved no money; anything else may have.
    if (response.status === 400 || response.status === 404) {
      const code = /"code":"([a-z_]+)"/.exec(text)?.[1] ?? "refused";
      throw new GatewayRefusedError(code, `gateway refused the refund (${response.status}): ${text}`);
    }
    throw new GatewayOutcomeUnknownError(`gateway answered ${response.status}: ${text}`);
  }

  /** The simulator's lookup by key reads its own table: a miss is a proof. */
  async findRefund({ idempotencyKey }: { idempotencyKey: string }): Promise<RefundLookup> {
    const url = new URL(`/v1/refunds/by-idempotency-key/${encodeURIComponent(idempotencyKey)}`, this.baseUrl);
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (response.status === 404) return { kind: "not_refunded" };
    if (!response.ok) throw new Error(`gateway refund lookup answered ${response.status}`);
    return { kind: "refunded", refund: toRefund(refundSchema.parse(await response.json())) };
  }

  /** A page of the simulator's list at `path` (its charges or refunds) for a window, oldest first. */
  private async listPage(path: string, { since, until, cursor, limit = 100 }: ChargeListWindow): Promise<unknown> {
    const url = new URL(path, this.baseUrl);
    url.searchParams.set("created_gte", since.toISOString());
    url.searchParams.set("created_lt", until.toISOString());
    url.searchParams.set("limit", String(limit));
    if (cursor) url.searchParams.set("starting_after", cursor);
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`gateway list ${path} answered ${response.status}`);
    return response.json();
  }

  async listRefunds(window: ChargeListWindow) {
    const page = refundListSchema.parse(await this.listPage("/v1/refunds", window));
    return { refunds: page.data.map(toListedRefund), nextCursor: page.next_cursor };
  }

  async listCharges(window: ChargeListWindow) {
    const page = listSchema.parse(await this.listPage("/v1/charges", window));
    return { charges: page.data.map(toListed), nextCursor: page.next_cursor };
  }
}
