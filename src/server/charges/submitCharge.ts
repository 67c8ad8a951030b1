import { randomUUID } from "node:crypto";
import { env } from "~/env";
import type { IdempotentRequest } from "~/generated/prisma/client";
import { deriveGatewayKey, gateway, type ChargeMetadata, type GatewayCharge, type GatewayChargeRequest } from "~/server/gateway";
import { requestHash } from "~/server/idempotency/canonicalHash";
import { parseIdempotencyKeyHeader } from "~/server/idempotency/idempotencyKeyHeader";
import { rememberAnswer, whileHeld } from "~/server/idempotency/heldClaims";
import { claimIdempotencyKey, releaseClaim, type StoredResponse } from "~/server/idempotency/store";
import { countChargeRequest } from "~/server/rollout/counters";
import { getIdempotencyMode } from "~/server/rollout/mode";
import { recordChargeAndComplete, recordKeylessCharge } from "./recordCharge";
import { createChargeSchema, fieldErrors, type CreateChargeInput } from "./schema";

/** The route name stored with every record; part of the unique (key, route). */
export const CHARGES_ROUTE = "POST /api/charges";

export type ChargeOutcome =
  | { kind: "invalid_request"; fields: Record<string, string[]> }
  | { kind: "invalid_idempotency_key"; message: string }
  | { kind: "idempotency_key_required" }
  | { kind: "response"; response: StoredResponse; replayed: boolean }
  | { kind: "in_progress" }
  | { kind: "key_reused" }
  | { kind: "gateway_unavailable" }
  /** The client hung up before its key was claimed: nothing was stored or charged. */
  | { kind: "client_gone" };

function gatewayRequest(input: CreateChargeInput, metadata: ChargeMetadata): GatewayChargeRequest {
  return { amountCents: input.amount_cents, currency: input.currency, cardToken: input.card_token, customerId: input.customer_id, metadata };
}

/** Calls the gateway; undefined when its outcome is unknown (timeout, 5xx, network). */
async function chargeOnGateway(input: CreateChargeInput, gatewayKey: string, metadata: ChargeMetadata): Promise<GatewayCharge | undefined> {
  try {
    return await gateway.charge(gatewayRequest(input, metadata), { idempotencyKey: gatewayKey, timeoutMs: env.GATEWAY_TIMEOUT_MS });
  } catch (error) {
    console.warn(`gateway outcome unknown for ${gatewayKey}: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * POST /api/charges, after authentication and JSON parsing. Validation happens
 * before any key is claimed, so an invalid request is never stored.
 */
export async function submitCharge(args: {
  apiClientId: number;
  body: unknown;
  idempotencyKeyHeader: string | null;
  /** Aborted when the client disconnects. */
  signal?: AbortSignal;
}): Promise<ChargeOutcome> {
  const key = parseIdempotencyKeyHeader(args.idempotencyKeyHeader);
  if (key.kind === "invalid") return { kind: "invalid_idempotency_key", message: key.reason };

  await countChargeRequest(args.apiClientId, key.kind === "valid");
  if (key.kind === "absent" && (await getIdempotencyMode()) === "required") return { kind: "idempotency_key_required" };

  const parsed = createChargeSchema.safeParse(args.body);
  if (!parsed.success) return { kind: "invalid_request", fields: fieldErrors(parsed.error) };

  // The last moment to drop the work: past here a key is claimed and must be
  // finished. Under overload, attempts wait so long that their client has timed
  // out (and retried); working on them anyway is how overload feeds itself.
  if (args.signal?.aborted) return { kind: "client_gone" };
  if (key.kind === "absent") return chargeWithoutKey(args.apiClientId, parsed.data);
  return chargeWithKey(args.apiClientId, key.key, args.body, parsed.data);
}

async function chargeWithKey(apiClientId: number, idempotencyKey: string, body: unknown, input: CreateChargeInput): Promise<ChargeOutcome> {
  const claimInput = { idempotencyKey, route: CHARGES_ROUTE, apiClientId, requestHash: requestHash(body) };
  const claim = await claimIdempotencyKey(claimInput);
  switch (claim.kind) {
    case "replay":
      return { kind: "response", response: claim.response, replayed: true };
    case "in_progress":
    case "key_reused":
      return { kind: claim.kind };
    case "claimed": {
      const outcome = await whileHeld(claimInput, () => chargeClaimed(claim.request, input));
      if (outcome.kind === "response") rememberAnswer(claimInput, outcome.response, claim.request.expiresAt);
      return outcome;
    }
  }
}

async function chargeClaimed(request: IdempotentRequest, input: CreateChargeInput): Promise<ChargeOutcome> {
  // No transaction or connection is held while the gateway works: a slow
  // gateway must not be able to drain the pool.
  const gatewayKey = deriveGatewayKey(request);
  try {
    const metadata = { requestId: String(request.id), apiClientId: String(request.apiClientId), idempotencyKey: request.idempotencyKey };
    const gatewayCharge = await chargeOnGateway(input, gatewayKey, metadata);
    if (!gatewayCharge) {
      // The money may have moved. The next retry calls the gateway again under
      // the same derived key, which answers with the charge it already made.
      await releaseClaim(request.id);
      return { kind: "gateway_unavailable" };
    }
    const response = await recordChargeAndComplete(request, gatewayCharge, gatewayKey);
    return response ? { kind: "response", response, replayed: false } : { kind: "in_progress" };
  } catch (error) {
    // Whatever failed (the database, most likely), do not leave the key stuck
    // in 409 until the sweeper: a retry is safe for the same reason as above.
    await releaseClaim(request.id).catch(() => {});
    throw error;
  }
}

async function chargeWithoutKey(apiClientId: number, input: CreateChargeInput): Promise<ChargeOutcome> {
  // Every keyless request is a new operation as far as anyone can tell; this
  // is exactly how a client's retry becomes a double charge.
  const gatewayKey = `gk_keyless_${randomUUID()}`;
  const gatewayCharge = await chargeOnGateway(input, gatewayKey, { requestId: "0", apiClientId: String(apiClientId), idempotencyKey: null });
  if (!gatewayCharge) return { kind: "gateway_unavailable" };
  return { kind: "response", response: await recordKeylessCharge(apiClientId, gatewayCharge, gatewayKey), replayed: false };
}
