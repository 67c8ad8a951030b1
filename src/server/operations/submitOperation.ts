import { addLogContext } from "~/server/observability/context";
import {
  findOperation,
  finishUnfinished,
  requestHash,
  runIdempotent,
  type Admission,
  type HeldClaim,
  type OperationState,
} from "~/server/idempotency";
import { parseIdempotencyKeyHeader } from "~/server/http/idempotencyKeyHeader";
import { countKeyedOperation, countKeyedRequest, countKeylessRequest } from "~/server/rollout/counters";
import { modeForKeylessRequest } from "~/server/rollout/mode";
import { withCompletionWrites } from "./completion";
import { settleOperation } from "./finality";
import { keylessAdmission } from "./keyless";
import type { MoneyOperation } from "./moneyOperation";
import { errorOutcome, type OperationOutcome } from "./outcome";
import { fieldErrors } from "./fieldErrors";

export type SubmitArgs = {
  apiClientId: number;
  body: unknown;
  idempotencyKeyHeader: string | null;
  /** Aborted when the client disconnects. */
  signal?: AbortSignal;
  /** Prefer: wait, in seconds: how long to wait for an operation found in flight. */
  waitSeconds?: number;
  /** The dashboard's own refund: its key is in the space no API client may use (DASHBOARD_KEY_PREFIX). */
  dashboard?: boolean;
};

/**
 * A money route's POST, after authentication and JSON parsing: the same for every route. Validation (and the
 * operation's precheck) happens before any key is claimed, so a refused request is never stored and its key
 * stays usable.
 *
 * Every request is counted for the rollout, per route, exactly once: a keyed one in memory, as an attempt, and as
 * an operation too when its key makes a new record (the claim's onNewRecord); a keyless one that claims, with
 * its record, by the transaction that completes it (completion.ts) or, refused, by the one that withdraws its
 * claim (keyless.ts, keylessAdmission); a keyless one answered before any claim here, before it is answered.
 */
export async function submitOperation<Input>(
  operation: MoneyOperation<Input>,
  args: SubmitArgs,
): Promise<OperationOutcome> {
  const key = parseIdempotencyKeyHeader(args.idempotencyKeyHeader, { dashboard: args.dashboard });
  if (key.kind === "invalid") return errorOutcome("invalid_idempotency_key", { message: key.reason });
  addLogContext({ idempotencyKey: key.kind === "valid" ? key.key : null });
  const checked = await checkBeforeClaim(operation, args, key.kind === "valid" ? key.key : null);
  if (key.kind === "valid") {
    countKeyedRequest(args.apiClientId, operation.route);
    return "input" in checked ? claimAndWork(operation, args, checked.input, key.key) : checked.answer;
  }
  // Keyless: refused when the header is required, globally or for this client. A request that claims learns the
  // mode in its claim's own round trip (keylessAdmission); one answered before any claim reads it here, so that
  // the header's error still comes before the body's.
  if ("input" in checked) {
    return claimAndWork(operation, args, checked.input, null, keylessAdmission(args.apiClientId, operation.route));
  }
  const refused = (await modeForKeylessRequest(args.apiClientId)) === "required";
  await countKeylessRequest(args.apiClientId, operation.route, { refused });
  return refused ? errorOutcome("idempotency_key_required") : checked.answer;
}

/** What is answered before any claim (an invalid body, a refusal, a client gone), or the input to claim for. */
async function checkBeforeClaim<Input>(
  operation: MoneyOperation<Input>,
  args: SubmitArgs,
  idempotencyKey: string | null,
): Promise<{ answer: OperationOutcome } | { input: Input }> {
  const parsed = operation.schema.safeParse(args.body);
  if (!parsed.success) {
    return { answer: errorOutcome("invalid_request", { details: { fields: fieldErrors(parsed.error) } }) };
  }
  // A refusal is for a new operation only: a retry of one under way or done (whose own hold may be what left
  // nothing to refund) goes on to the protocol, which replays, answers 409 or 422, or takes it over. A keyed
  // request whose claim makes the operation's writes is refused by them instead, under their locks.
  const claimDecides = idempotencyKey !== null && operation.declines !== undefined;
  const refusal = claimDecides ? null : await operation.precheck?.(args.apiClientId, parsed.data);
  if (refusal && !(idempotencyKey && (await operationExists(operation, args.apiClientId, idempotencyKey)))) {
    return { answer: errorOutcome(refusal.code, { message: refusal.message, details: refusal.details }) };
  }
  // The last moment to drop the work: past here a key is claimed and must be
  // finished. Under overload, attempts wait so long that their client has timed
  // out (and retried); working on them anyway is how overload feeds itself.
  if (args.signal?.aborted) return { answer: errorOutcome("client_closed_request") };
  return { input: parsed.data };
}

async function claimAndWork<Input>(
  operation: MoneyOperation<Input>,
  args: SubmitArgs,
  input: Input,
  idempotencyKey: string | null,
  admission?: Admission,
): Promise<OperationOutcome> {
  // A keyless request gets a record too (under no key, so nothing ever replays
  // it): a crash or an unknown gateway outcome then leaves something for the
  // sweeper and the ledger to finish, instead of money the app never knew of.
  const shown = operation.shown(args.body as Record<string, unknown>, input);
  const claim = {
    idempotencyKey,
    route: operation.route,
    apiClientId: args.apiClientId,
    requestHash: requestHash(args.body),
    customerId: shown.customerId,
    fields: shown.fields,
    admission,
    onNewRecord: idempotencyKey === null ? undefined : () => countKeyedOperation(args.apiClientId, operation.route),
    atClaim: idempotencyKey === null ? undefined : operation.declines?.atClaim(args.apiClientId, input),
  };
  const work = (held: HeldClaim) => operation.work(held, input).then((r) => withCompletionWrites(held.record, r));
  const settle = (held: HeldClaim) => settleOperation(operation, held);
  const outcome = await runIdempotent(
    claim,
    { work, settle },
    {
      waitMs: (args.waitSeconds ?? 0) * 1000,
      signal: args.signal,
    },
  );
  const { waited } = outcome;
  switch (outcome.kind) {
    case "fresh":
    case "replay": {
      const { response, expiresAt } = outcome;
      return { kind: "response", response, replayed: outcome.kind === "replay", waited, expiresAt };
    }
    case "in_progress":
      return { kind: "in_progress", since: outcome.since, waited, expiresAt: outcome.expiresAt };
    case "key_reused":
      return errorOutcome("idempotency_key_reused");
    case "refused":
      return errorOutcome("idempotency_key_required");
    case "declined": {
      // A keyless request declined by its work left no record to count it with.
      if (idempotencyKey === null) await countKeylessRequest(args.apiClientId, operation.route, { refused: false });
      if (!operation.declines) throw new Error(`${operation.route}: declined, but it has no refusal to answer`);
      const refusal = await operation.declines.refusal(args.apiClientId, input, outcome.rows);
      return errorOutcome(refusal.code, { message: refusal.message, details: refusal.details });
    }
    case "unknown_outcome":
      // With a key the client retries under it; without one a retry is a second operation, so it gets a handle.
      return idempotencyKey === null
        ? errorOutcome(operation.unknownOutcome, { details: { request_id: String(outcome.requestId) } })
        : errorOutcome("gateway_unavailable");
  }
}

async function operationExists<Input>(operation: MoneyOperation<Input>, apiClientId: number, idempotencyKey: string) {
  const state = await findOperation({ idempotencyKey, route: operation.route, apiClientId });
  return state.kind !== "unknown";
}

/**
 * GET ?idempotency_key=K (or ?request_id=N, the handle of a keyless request whose outcome was unknown): the state
 * of the client's own operation on this route, without resending it. One that nobody is working on is settled
 * here and now, as the sweeper would: taken over under the fence (as recovery: a lookup never moves the clock of
 * its write-off) and asked of the gateway under its derived key. Found made, it completes with the real answer;
 * found not made, it is written off only once nothing can still be made (operations/finality.ts).
 */
export async function findOperationOf<Input>(
  operation: MoneyOperation<Input>,
  apiClientId: number,
  handle: { idempotencyKey: string } | { requestId: bigint },
): Promise<OperationState> {
  const find = () => findOperation({ ...handle, route: operation.route, apiClientId });
  const state = await find();
  if (state.kind !== "unfinished") return state;
  await finishUnfinished(state.record, (held) => settleOperation(operation, held));
  const settled = await find();
  return settled.kind === "unfinished" ? { kind: "in_progress", since: settled.since } : settled;
}
