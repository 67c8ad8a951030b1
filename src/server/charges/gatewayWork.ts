import { env } from "~/env";
import { deriveGatewayKey, gateway, metadataFor } from "~/server/gateway";
import type { HeldClaim, IdempotencyRecord, WorkResult } from "~/server/idempotency";
import { log } from "~/server/observability/log";
import { metrics, secondsSince } from "~/server/observability/metrics";
import { chargeCompletion } from "./chargeRows";
import { abandonedResponse } from "./responses";
import type { CreateChargeInput } from "./schema";

/** A record as logs name it (the sweeper logs outside any request's context). */
const recordFields = (record: IdempotencyRecord) => ({
  recordId: String(record.id),
  apiClientId: record.apiClientId,
  idempotencyKey: record.idempotencyKey,
});

/**
 * The work of POST /api/charges under a held claim: one gateway call under the
 * derived key, bounded by the claim's deadline. Every attempt of the operation
 * sends the same key, so a charge that got there is found again, never made
 * twice. No transaction or connection is held meanwhile: a slow gateway must
 * not be able to drain the pool.
 */
export async function chargeOnGateway(held: HeldClaim, input: CreateChargeInput): Promise<WorkResult> {
  const gatewayKey = deriveGatewayKey(held.record);
  const timeoutMs = Math.min(env.GATEWAY_TIMEOUT_MS, held.deadline.getTime() - Date.now());
  const startedAt = performance.now();
  try {
    const charge = await gateway.charge(
      {
        amountCents: input.amount_cents,
        currency: input.currency,
        cardToken: input.card_token,
        customerId: input.customer_id,
        metadata: metadataFor(held.record),
      },
      // Not after the claim's deadline: a request that arrives later is refused by the gateway, so that the
      // sweeper's "never charged", decided once every deadline has passed, stays true.
      { idempotencyKey: gatewayKey, timeoutMs, notAfter: held.deadline, firstAttemptAt: held.record.createdAt },
    );
    const result = charge.status === "succeeded" ? "charged" : "declined";
    metrics.gatewaySeconds.observe({ result }, secondsSince(startedAt));
    return chargeCompletion(held.record, charge, gatewayKey);
  } catch (error) {
    // Timeout, 5xx, network, an answer we cannot read: the money may have moved.
    // The next attempt asks again under the same key and gets the charge if so.
    metrics.gatewaySeconds.observe({ result: "unknown" }, secondsSince(startedAt));
    log.warn({ ...recordFields(held.record), err: error }, "gateway outcome unknown; the claim is released");
    return { kind: "unknown" };
  }
}

/**
 * What happened to an operation nobody finished, asked of the gateway without
 * creating anything: the real answer if it charged, 500 request_abandoned if it
 * provably did not (saying whether the gateway refused a request under the key
 * or has no trace of one), and unknown (ask again later) if it cannot tell yet (a
 * provider whose lookup lags, until long enough after the last attempt).
 */
export async function settleFromGateway(held: HeldClaim): Promise<WorkResult> {
  const gatewayKey = deriveGatewayKey(held.record);
  const lookup = await gateway.findCharge({
    idempotencyKey: gatewayKey,
    metadata: metadataFor(held.record),
    lastAttemptAt: held.record.lastAttemptAt,
    firstAttemptAt: held.record.createdAt,
  });
  switch (lookup.kind) {
    case "charged":
      return chargeCompletion(held.record, lookup.charge, gatewayKey, "reconciled");
    case "not_charged": {
      const trace =
        lookup.refused === null ? { kind: "no_trace" as const } : { kind: "refused" as const, code: lookup.refused };
      return { kind: "complete", response: abandonedResponse(trace), writes: [], finishedBy: "abandoned" };
    }
    case "unproven":
      log.warn({ ...recordFields(held.record), reason: lookup.reason }, "the gateway cannot tell yet; ask again later");
      return { kind: "unknown" };
  }
}
