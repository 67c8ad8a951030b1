import { env } from "~/env";
import { gateway } from "~/server/gateway";
import { timing, type HeldClaim, type IdempotencyRecord, type WorkResult } from "~/server/idempotency";
import { withCompletionWrites } from "./completion";
import type { MoneyOperation } from "./moneyOperation";

/**
 * "Nothing was made" is said only when nothing can still be made, and then soon: the one rule of a write-off, for
 * every money route and both gateway protocols. An operation the gateway shows no trace of (or refused) is
 * answered so (500 request_abandoned, stored, final) once both hold:
 * - it is due: `dueAfterMs` (REAP_AFTER_MS) after its first attempt. Until then a retry may still call the gateway
 *   (the protocol's attempt window ends there: a retry calls only while its whole lease fits before it);
 * - its last attempt can no longer land: that attempt's lease has ended (its deadline went to the gateway), and the
 *   gateway's late-landing time after it has passed (0 for the simulator, which refuses a request carried out after
 *   its deadline; Stripe's consistency window, since Stripe cannot be told one).
 * Both count from attempts, never from lookups: a client polling GET or retrying POST does not postpone it. So an
 * operation whose gateway never answers is final within REAP_AFTER_MS + the late-landing time of its first
 * attempt (for a client that vanishes, plus a sweep interval).
 */
export function writeOffAt(record: IdempotencyRecord, dueAfterMs = env.REAP_AFTER_MS): Date {
  const due = record.createdAt.getTime() + dueAfterMs;
  const landed = record.lastAttemptAt.getTime() + timing.leaseMs + gateway.lateLandingMs;
  return new Date(Math.max(due, landed));
}

/**
 * What happened to an operation nobody finished, asked of the gateway without creating anything (its route's
 * `settle`), under the rule above: a write-off before its time is "not known yet", to be asked again later.
 * Every recovery goes through here: the sweeper, the reconciliation, a settling GET, a retry past the attempt
 * window. `dueAfterMs`: a sweep told to finish records sooner (tests) moves the due time, never the landing.
 */
export async function settleOperation(
  operation: Pick<MoneyOperation<unknown>, "settle">,
  held: HeldClaim,
  dueAfterMs?: number,
): Promise<WorkResult> {
  const result = await operation.settle(held);
  const writeOff = result.kind === "complete" && result.finishedBy === "abandoned";
  if (writeOff && Date.now() < writeOffAt(held.record, dueAfterMs).getTime()) return { kind: "unknown" };
  return withCompletionWrites(held.record, result);
}
