import { findOperation, runIdempotent, requestHash, type StoredResponse } from "~/server/idempotency";
import { parseIdempotencyKeyHeader } from "~/server/idempotency/idempotencyKeyHeader";
import { countChargeRequest } from "~/server/rollout/counters";
import { getIdempotencyMode } from "~/server/rollout/mode";
import { chargeOnGateway } from "./gatewayWork";
import { createChargeSchema, fieldErrors, fieldsToShow } from "./schema";

/** The route name stored with every record; part of the unique (key, route). */
export const CHARGES_ROUTE = "POST /api/charges";

export type ChargeOutcome =
  | { kind: "invalid_request"; fields: Record<string, string[]> }
  | { kind: "invalid_idempotency_key"; message: string }
  | { kind: "idempotency_key_required" }
  | { kind: "response"; response: StoredResponse; replayed: boolean; waited?: boolean }
  /** Another attempt holds the operation, which started at `since`. */
  | { kind: "in_progress"; since: Date | null; waited?: boolean }
  | { kind: "key_reused" }
  | { kind: "gateway_unavailable" }
  /** The client hung up before its key was claimed: nothing was stored or charged. */
  | { kind: "client_gone" };

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
  /** Prefer: wait, in seconds: how long to wait for an operation found in flight. */
  waitSeconds?: number;
}): Promise<ChargeOutcome> {
  const key = parseIdempotencyKeyHeader(args.idempotencyKeyHeader);
  if (key.kind === "invalid") return { kind: "invalid_idempotency_key", message: key.reason };

  // A keyless request is refused when the header is required, globally or for this client, and counted either way.
  const refused = key.kind === "absent" && (await getIdempotencyMode(args.apiClientId)) === "required";
  await countChargeRequest(args.apiClientId, key.kind === "valid", { refused });
  if (refused) return { kind: "idempotency_key_required" };

  const parsed = createChargeSchema.safeParse(args.body);
  if (!parsed.success) return { kind: "invalid_request", fields: fieldErrors(parsed.error) };

  // The last moment to drop the work: past here a key is claimed and must be
  // finished. Under overload, attempts wait so long that their client has timed
  // out (and retried); working on them anyway is how overload feeds itself.
  if (args.signal?.aborted) return { kind: "client_gone" };

  // A keyless request gets a record too (under no key, so nothing ever replays
  // it): a crash or an unknown gateway outcome then leaves something for the
  // sweeper and the ledger to finish, instead of a charge the app never knew of.
  const claim = {
    idempotencyKey: key.kind === "valid" ? key.key : null,
    route: CHARGES_ROUTE,
    apiClientId: args.apiClientId,
    requestHash: requestHash(args.body),
    // For the dashboard: what was asked, as sent, never the card token.
    customerId: parsed.data.customer_id,
    fields: fieldsToShow(args.body as Record<string, unknown>),
  };
  const outcome = await runIdempotent(claim, (held) => chargeOnGateway(held, parsed.data), {
    waitMs: (args.waitSeconds ?? 0) * 1000,
    signal: args.signal,
  });
  const { waited } = outcome;
  switch (outcome.kind) {
    case "fresh":
      return { kind: "response", response: outcome.response, replayed: false, waited };
    case "replay":
      return { kind: "response", response: outcome.response, replayed: true, waited };
    case "in_progress":
      return { kind: "in_progress", since: outcome.since, waited };
    case "key_reused":
      return { kind: "key_reused" };
    case "unknown_outcome":
      return { kind: "gateway_unavailable" };
  }
}

/** GET /api/charges?idempotency_key=K: the state of the client's own operation, without resending it. */
export function findChargeOperation(apiClientId: number, idempotencyKey: string) {
  return findOperation({ idempotencyKey, route: CHARGES_ROUTE, apiClientId });
}
