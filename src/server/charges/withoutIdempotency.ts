import { randomUUID } from "node:crypto";
import { env } from "~/env";
import { execute, queryRows } from "~/server/db";
import { gateway } from "~/server/gateway";
import type { StoredResponse } from "~/server/idempotency";
import { chargeFromGateway, insertCharge } from "./chargeRows";
import { responseForCharge } from "./responses";
import type { CreateChargeInput } from "./schema";

/**
 * BENCHMARKS ONLY (BENCHMARK_SKIP_IDEMPOTENCY, refused outside a benchmark's
 * own database): the same charge with no idempotency layer at all, no record,
 * no claim, no completion transaction, a fresh gateway key every time. What
 * keyed requests are measured against to give the layer's honest cost
 * (bench/overhead.ts), and, with `floor`, plus the one round trip no
 * idempotency layer can skip. A retry of this is a second charge.
 */
export async function chargeWithoutIdempotency(apiClientId: number, input: CreateChargeInput): Promise<StoredResponse> {
  // BENCHMARK_SKIP_IDEMPOTENCY=floor: where the claim would be, the cheapest round trip there is.
  if (env.BENCHMARK_SKIP_IDEMPOTENCY === "floor") await queryRows({ sql: "SELECT 1", values: [] });
  const gatewayKey = `bench_${randomUUID()}`;
  const gatewayCharge = await gateway.charge(
    {
      amountCents: input.amount_cents,
      currency: input.currency,
      cardToken: input.card_token,
      customerId: input.customer_id,
      metadata: { requestId: "none", apiClientId: String(apiClientId), idempotencyKey: null },
    },
    { idempotencyKey: gatewayKey, timeoutMs: env.GATEWAY_TIMEOUT_MS },
  );
  const charge = chargeFromGateway({ apiClientId, id: null }, gatewayCharge, gatewayKey);
  await execute(insertCharge(charge));
  return responseForCharge(charge);
}
