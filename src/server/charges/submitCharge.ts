import { env } from "~/env";
import { addLogContext } from "~/server/observability/context";
import { findOperation, runIdempotent, requestHash, type Admission, type StoredResponse } from "~/server/idempotency";
import { parseIdempotencyKeyHeader } from "~/server/idempotency/idempotencyKeyHeader";
import { countKeyedOperation, countKeyedRequest, countKeylessRequest } from "~/server/rollout/counters";
import { keylessAdmission, modeForKeylessRequest } from "~/server/rollout/mode";
import { chargeOnGateway } from "./gatewayWork";
import { createChargeSchema, fieldErrors, fieldsToShow, type CreateChargeInput } from "./schema";
import { chargeWithoutIdempotency } from "./withoutIdempotency";

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
  /** Keyless, and the gateway's outcome is unknown: not to be resent; `requestId` finds it later. */
  | { kind: "charge_outcome_unknown"; requestId: bigint }
  /** The client hung up before its key was claimed: nothing was stored or charged. */
  | { kind: "client_gone" };

type ChargeArgs = {
  apiClientId: number;
  body: unknown;
  idempotencyKeyHeader: string | null;
  /** Aborted when the client disconnects. */
  signal?: AbortSignal;
  /** Prefer: wait, in seconds: how long to wait for an operation found in flight. */
  waitSeconds?: number;
};

/**
 * POST /api/charges, after authentication and JSON parsing. Validation happens
 * before any key is claimed, so an invalid request is never stored.
 *
 * Every request is counted for the rollout, exactly once: a keyed one in
 * memory, as an attempt, and as an operation too when its key makes a new
 * record; a keyless one that claims, with its record, by the transaction that
 * completes it (chargeRows.ts) or, refused, by the one that withdraws its claim
 * (rollout/mode.ts, keylessAdmission); a keyless one answered before any claim
 * (invalid, its client gone) here, before it is answered.
 */
export async function submitCharge(args: ChargeArgs): Promise<ChargeOutcome> {
  const key = parseIdempotencyKeyHeader(args.idempotencyKeyHeader);
  if (key.kind === "invalid") return { kind: "invalid_idempotency_key", message: key.reason };
  addLogContext({ idempotencyKey: key.kind === "valid" ? key.key : null });
  const checked = checkBeforeClaim(args);
  if (key.kind === "valid") {
    countKeyedRequest(args.apiClientId, CHARGES_ROUTE);
    return "input" in checked ? claimAndCharge(args, checked.input, key.key) : checked.answer;
  }
  // Keyless: refused when the header is required, globally or for this client. A request that claims learns the
  // mode in its claim's own round trip (keylessAdmission); one answered before any claim reads it here, so that
  // the header's error still comes before the body's.
  if ("input" in checked)
    return claimAndCharge(args, checked.input, null, keylessAdmission(args.apiClientId, CHARGES_ROUTE));
  const refused = (await modeForKeylessRequest(args.apiClientId)) === "required";
  await countKeylessRequest(args.apiClientId, CHARGES_ROUTE, { refused });
  return refused ? { kind: "idempotency_key_required" } : checked.answer;
}

/** What is answered before any claim (an invalid body, a client gone), or the charge to claim for. */
function checkBeforeClaim(args: ChargeArgs): { answer: ChargeOutcome } | { input: CreateChargeInput } {
  const parsed = createChargeSchema.safeParse(args.body);
  if (!parsed.success) return { answer: { kind: "invalid_request", fields: fieldErrors(parsed.error) } };
  // The last moment to drop the work: past here a key is claimed and must be
  // finished. Under overload, attempts wait so long that their client has timed
  // out (and retried); working on them anyway is how overload feeds itself.
  if (args.signal?.aborted) return { answer: { kind: "client_gone" } };
  return { input: parsed.data };
}

async function claimAndCharge(
  args: ChargeArgs,
  input: CreateChargeInput,
  idempotencyKey: string | null,
  admission?: Admission,
): Promise<ChargeOutcome> {
  if (env.BENCHMARK_SKIP_IDEMPOTENCY) {
    const response = await chargeWithoutIdempotency(args.apiClientId, input);
    return { kind: "response", response, replayed: false };
  }

  // A keyless request gets a record too (under no key, so nothing ever replays
  // it): a crash or an unknown gateway outcome then leaves something for the
  // sweeper and the ledger to finish, instead of a charge the app never knew of.
  const claim = {
    idempotencyKey,
    route: CHARGES_ROUTE,
    apiClientId: args.apiClientId,
    requestHash: requestHash(args.body),
    // For the dashboard: what was asked, as sent, never the card token.
    customerId: input.customer_id,
    fields: fieldsToShow(args.body as Record<string, unknown>),
    admission,
    onNewRecord: idempotencyKey === null ? undefined : () => countKeyedOperation(args.apiClientId, CHARGES_ROUTE),
  };
  const outcome = await runIdempotent(claim, (held) => chargeOnGateway(held, input), {
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
    case "refused":
      return { kind: "idempotency_key_required" };
    case "unknown_outcome":
      // With a key the client retries under it; without one a retry is a second charge, so it gets a handle.
      return claim.idempotencyKey === null
        ? { kind: "charge_outcome_unknown", requestId: outcome.requestId }
        : { kind: "gateway_unavailable" };
  }
}

/**
 * GET /api/charges?idempotency_key=K (or ?request_id=N, the handle of a keyless request whose outcome was
 * unknown): the state of the client's own operation, without resending it.
 */
export function findChargeOperation(apiClientId: number, handle: { idempotencyKey: string } | { requestId: bigint }) {
  return findOperation({ ...handle, route: CHARGES_ROUTE, apiClientId });
}
