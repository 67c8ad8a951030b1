import { randomUUID } from "node:crypto";
import { env } from "~/env";
import { atomically, execute, type Statement } from "~/server/db";
import { gateway } from "~/server/gateway";
import type { StoredResponse } from "~/server/idempotency";
import { authenticateApiClient } from "~/server/auth/apiClients";
import { chargeFromGateway, insertCharge } from "~/server/charges/chargeRows";
import { responseForCharge } from "~/server/charges/responses";
import { createChargeSchema, type CreateChargeInput } from "~/server/charges/schema";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { readJsonBody } from "~/server/http/readJsonBody";
import { fieldErrors } from "~/server/operations/fieldErrors";

/**
 * BENCHMARKS ONLY (BENCHMARK_SKIP_IDEMPOTENCY, refused outside a benchmark's
 * own database): the same charge with no idempotency layer at all, no record,
 * no claim, no completion transaction, a fresh gateway key every time. What
 * keyed requests are measured against to give the layer's honest cost
 * (bench/overhead.ts). A retry of this is a second charge.
 *
 * With `floor`, the least that any insert-first idempotency layer has to do,
 * and nothing of this one's: a durable claim (one autocommitted INSERT under a
 * unique index, in a table with nothing else in it) before the gateway is
 * called, and the outcome stored by an UPDATE of that row in the charge's own
 * transaction (one round trip, the way records.complete sends it). What keyed
 * requests could reach on this machine if the layer's own work cost nothing.
 *
 * Keyless requests under it are neither refused nor counted for the rollout:
 * the benchmarks that switch it on send keyed ones.
 */
export async function chargeWithoutIdempotency(apiClientId: number, input: CreateChargeInput): Promise<StoredResponse> {
  const floorKey = env.BENCHMARK_SKIP_IDEMPOTENCY === "floor" ? await claimFloor() : null;
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
  const response = responseForCharge(charge);
  if (floorKey === null) await execute(insertCharge(charge));
  else await atomically([completeFloor(floorKey, response.status), insertCharge(charge)]);
  return response;
}

/** The floor's own table, made on first use (only in a benchmark database: env.ts refuses the switch elsewhere). */
let floorTable: Promise<number> | undefined;

async function claimFloor(): Promise<string> {
  floorTable ??= execute({
    sql: `CREATE TABLE IF NOT EXISTS bench_claim_floor (
            id BIGINT AUTO_INCREMENT PRIMARY KEY,
            claim_key CHAR(36) NOT NULL UNIQUE,
            response_status SMALLINT NULL)`,
    values: [],
  });
  await floorTable;
  const key = randomUUID();
  await execute({ sql: "INSERT INTO bench_claim_floor (claim_key) VALUES (?)", values: [key] });
  return key;
}

const completeFloor = (key: string, status: number): Statement => ({
  sql: "UPDATE bench_claim_floor SET response_status = ? WHERE claim_key = ? AND response_status IS NULL",
  values: [status, key],
});

/** The route's work with no layer of its own: validation, the gateway charge, the charge row. */
export async function chargeWithoutLayer(apiClientId: number, body: unknown): Promise<StoredResponse> {
  const parsed = createChargeSchema.safeParse(body);
  if (!parsed.success) {
    const invalid = errorResponse("invalid_request", { details: { fields: fieldErrors(parsed.error) } });
    return { status: invalid.status, body: await invalid.text() };
  }
  return chargeWithoutIdempotency(apiClientId, parsed.data);
}

/** POST /api/charges with BENCHMARK_SKIP_IDEMPOTENCY: authenticated and parsed as the route does, then no layer. */
export function postWithoutLayer(request: Request): Promise<Response> {
  return handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    const sent = await chargeWithoutLayer(client.id, await readJsonBody(request, env.MAX_BODY_BYTES));
    return jsonResponse(sent.status, sent.body);
  });
}
