import { addLogContext, currentLogContext } from "~/server/observability/context";
import { metrics, secondsSince } from "~/server/observability/metrics";
import { log } from "~/server/observability/log";
import { noteAnswer } from "./events";
import { answerHere, rememberAnswer, waitForHeldHere, whileHeld } from "./memory";
import {
  isExpired,
  takerAt,
  type FinishedBy,
  type IdempotencyRecord,
  type StoredResponse,
  type Taker,
} from "./lifecycle";
import { findById } from "./queries";
import * as records from "./records";
import type { ClaimInput, HeldClaim, IdempotentOutcome, WorkResult } from "./types";

/**
 * A claim can lose races with a delete (expiry), a take-over, or another
 * cluster node's insert (a certification failure); a few rounds settle it.
 */
const MAX_CLAIM_ROUNDS = 4;

/** Work that cannot start with at least this long before its deadline renews the lease first. */
const MIN_WORK_MS = 1_000;

/** What an existing record means for a request that found it (the decision table; see lifecycle.ts). */
export type Answer = "expire" | "key_reused" | "replay" | "in_progress" | "take";

export function answerFor(existing: IdempotencyRecord, claim: ClaimInput, now: Date): Answer {
  // Past its lifetime a complete record's key names a new operation, whatever the payload.
  if (isExpired(existing, now)) return "expire";
  if (existing.apiClientId !== claim.apiClientId || existing.requestHash !== claim.requestHash) return "key_reused";
  switch (existing.phase.name) {
    case "complete":
      return "replay";
    case "held":
      return "in_progress";
    case "released":
    case "lease_expired":
      return "take";
  }
}

/**
 * What an operation does under a held claim: `work` calls the gateway (under the derived key) and says what came
 * of it; `settle` only asks the gateway what an earlier attempt did, creating nothing (a retry past the attempt
 * window runs it instead of `work`: Timing).
 */
export type OperationWork = {
  work: (held: HeldClaim) => Promise<WorkResult>;
  settle: (held: HeldClaim) => Promise<WorkResult>;
};

/**
 * The idempotency protocol, the one entry point for a request under a key
 * (Powertools' IdempotencyHandler): claims the key by INSERT (the unique index
 * decides between concurrent requests; there is no check-then-insert), answers
 * a replay, a 409 or a 422 when it is not this request's to do, runs `work`
 * while the claim is held, and stores its answer together with the rows it
 * asks for, in one transaction, or releases the claim when the outcome is
 * unknown. A keyless request (null key) gets a record too, so that a crash or
 * an unknown gateway outcome leaves something for the sweeper to finish.
 *
 * Retries of a request this process is working on, or has just finished, are
 * answered from memory, without a round trip (memory.ts).
 */
export async function runIdempotent(
  claim: ClaimInput,
  operation: OperationWork,
  { waitMs = 0, signal }: WaitOptions = {},
): Promise<IdempotentOutcome & { waited: boolean }> {
  const deadline = Date.now() + waitMs;
  let outcome = await attempt(claim, operation);
  let waited = false;
  // Prefer: wait. While another attempt holds the operation, wait for its answer
  // instead of sending the client away with a 409: on the holder's work when it
  // is in this process, else by reading the record again, with backoff, holding
  // no connection while asleep. Each round decides afresh (a released claim is
  // taken, a complete one replayed), so waiting never bypasses the protocol.
  for (
    let pause = FIRST_POLL_MS;
    outcome.kind === "in_progress" && !signal?.aborted;
    pause = Math.min(pause * 2, MAX_POLL_MS)
  ) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    waited = true;
    if (!(await waitForHeldHere(claim, left))) await sleep(Math.min(pause, left));
    outcome = await attempt(claim, operation);
  }
  noteAnswer(claim, outcome, waited);
  return { ...outcome, waited };
}

export type WaitOptions = {
  /** How long a request that finds its operation in flight may wait for the answer (0: answer 409 at once). */
  waitMs?: number;
  /** The client hung up: stop waiting. */
  signal?: AbortSignal;
};

const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function attempt(claim: ClaimInput, operation: OperationWork): Promise<IdempotentOutcome> {
  const known = answerHere(claim);
  if (known) return known;
  const startedAt = performance.now();
  const claimed = await claimOrAnswer(claim);
  metrics.claimSeconds.observe({ result: claimed.kind }, secondsSince(startedAt));
  // An answer read from the record is remembered like one just stored: a client retrying it sends more.
  if (claimed.kind === "replay") rememberAnswer(claim, claimed.response, claimed.expiresAt);
  if (claimed.kind !== "claimed") return claimed;
  const { record, atClaim, taker } = claimed;
  addLogContext({ recordId: String(record.id) });
  if (claim.idempotencyKey === null) return keylessOutcome(record, operation.work);
  const outcome = await whileHeld(claim, record, () =>
    taker === "recovery"
      ? settleUnderClaim(record, operation.settle)
      : workUnderClaim(record, operation.work, { atClaim }),
  );
  if (outcome.kind === "fresh" || outcome.kind === "replay") rememberAnswer(claim, outcome.response, outcome.expiresAt);
  return outcome;
}

/**
 * A retry past the attempt window: it asks what the earlier attempts did instead of calling again. Not knowing yet
 * is "in progress" (the operation's answer is on its way, and final in bounded time), not "the gateway did not
 * answer", which would be this attempt's own.
 */
async function settleUnderClaim(
  record: IdempotencyRecord,
  settle: (held: HeldClaim) => Promise<WorkResult>,
): Promise<IdempotentOutcome> {
  const outcome = await workUnderClaim(record, settle, { taker: "recovery" });
  if (outcome.kind !== "unknown_outcome") return outcome;
  return { kind: "in_progress", since: record.createdAt, expiresAt: record.expiresAt };
}

/**
 * What a keyless request that holds a record is answered: its own outcome (fresh), the one the sweeper stored
 * (replay), or an unknown outcome with the record as the client's handle. Never "in progress" (someone else took
 * the record over: this process stalled past its lease), which Prefer: wait would answer with another attempt,
 * and never an error, which says "retry": without a key, every retry is a new claim, a new gateway key, and
 * possibly a second charge. The record is settled by the sweeper, which asks the gateway what happened. Nor the
 * sweeper's write-off when the gateway did answer this request's work (logged by workUnderClaim): "no charge was
 * made" would invite the second charge too.
 */
async function keylessOutcome(
  record: IdempotencyRecord,
  work: (held: HeldClaim) => Promise<WorkResult>,
): Promise<IdempotentOutcome> {
  let answered = false;
  try {
    const outcome = await workUnderClaim(record, async (held) => {
      const result = await work(held);
      answered = gatewayAnswered(result);
      return result;
    });
    if (outcome.kind !== "in_progress" && !(answered && isWriteOff(outcome))) return outcome;
  } catch (error) {
    log.error({ err: error, requestId: String(record.id) }, "keyless request failed after its claim; swept later");
  }
  return { kind: "unknown_outcome", requestId: record.id };
}

/**
 * The work came back complete with rows to store: for a request's own work, the gateway's definite answer (a
 * charge or a decline). (A sweeper's write-off of a keyless record stores its count too.)
 */
const gatewayAnswered = (result: WorkResult) =>
  result.kind === "complete" && result.finishedBy !== "abandoned" && result.writes.length > 0;

/** The sweeper's answer for an operation it found the gateway never carried out. */
const isWriteOff = (outcome: IdempotentOutcome) => outcome.kind === "replay" && outcome.finishedBy === "abandoned";

type Claimed = { kind: "claimed"; record: IdempotencyRecord; atClaim?: unknown[]; taker?: Taker };

/**
 * Claims: the INSERT decides, and when the key is taken, the record that holds
 * it (read in the same round trip, records.claim) answers: a replay, a 409, a
 * 422, or a take-over of a released claim. One round trip either way. (On a
 * cluster, two nodes' INSERTs of one key can both pass their local check; the
 * loser fails certification, 1213, and goes round again, to the duplicate.)
 */
async function claimOrAnswer(input: ClaimInput): Promise<IdempotentOutcome | Claimed> {
  let claim = input;
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    const now = new Date();
    const result = await records.claim(claim, now);
    if ("conflicted" in result) {
      metrics.claimConflicts.inc();
      // Writes made with the claim do not wait for locks: the next round claims alone, and the work writes.
      claim = { ...claim, atClaim: undefined };
      continue;
    }
    if ("refused" in result) return { kind: "refused" };
    if ("declined" in result) return { kind: "declined", rows: result.declined };
    if ("claimed" in result) {
      claim.onNewRecord?.();
      return { kind: "claimed", record: result.claimed, atClaim: result.atClaim };
    }
    if (!result.found) continue; // deleted (expired) between our insert and our read: go round again
    const answer = await answerExisting(result.found, claim, now);
    if (answer) return answer;
  }
  throw new Error(`could not claim idempotency key after ${MAX_CLAIM_ROUNDS} rounds`);
}

/** What a record found under the key means for this request (answerFor); undefined: go round again. */
async function answerExisting(
  existing: IdempotencyRecord,
  claim: ClaimInput,
  now: Date,
): Promise<IdempotentOutcome | Claimed | undefined> {
  switch (answerFor(existing, claim, now)) {
    case "expire":
      await records.expire(existing);
      return undefined;
    case "key_reused":
      await records.recordKeyReuse(existing, claim);
      return { kind: "key_reused" };
    case "replay":
      return existing.phase.name === "complete" ? replayOf(existing, existing.phase) : undefined;
    case "in_progress":
      return { kind: "in_progress", since: existing.createdAt, expiresAt: existing.expiresAt };
    case "take": {
      const taker = takerAt(existing, now, records.timing);
      const taken = await records.take(existing, now, taker);
      if (taken) return { kind: "claimed", record: taken, taker };
      return { kind: "in_progress", since: existing.createdAt, expiresAt: existing.expiresAt };
    }
  }
}

/**
 * Runs work under a claim this process holds and stores what it came to. `taker`: whether the work calls the
 * gateway (`retry`, also a claim's first attempt) or only asks it (`recovery`): a lease renewed for work that calls
 * moves the record's attempt time too.
 */
export async function workUnderClaim(
  taken: IdempotencyRecord,
  work: (held: HeldClaim) => Promise<WorkResult>,
  { atClaim, taker = "retry" }: { atClaim?: unknown[]; taker?: Taker } = {},
): Promise<IdempotentOutcome> {
  const record = await withTimeToWork(taken, taker);
  if (!record) return currentAnswer(taken);
  const held: HeldClaim = { record, deadline: records.deadlineOf(leaseOf(record)), atClaim };
  let result: WorkResult;
  try {
    result = await work(held);
  } catch (error) {
    // Whatever failed, do not leave the key stuck until the lease ends: the next
    // attempt asks the gateway again under the same derived key, which is safe.
    await records.release(record, "error").catch(() => {});
    throw error;
  }
  if (result.kind === "unknown") {
    await records.release(record, "outcome unknown");
    return { kind: "unknown_outcome", requestId: record.id };
  }
  if (result.kind === "declined") {
    // Nothing moved: the record goes, so that nothing is stored and the key stays usable (lifecycle.ts, withdraw).
    const withdrawn = await records.withdraw(record).catch(async (error: unknown) => {
      await records.release(record, "error").catch(() => {});
      throw error;
    });
    return withdrawn ? { kind: "declined", rows: result.rows } : currentAnswer(record);
  }
  // The answer names the request that produced it (a replay says so in Original-Request); the sweeper's, none.
  const requestId = currentLogContext()?.requestId;
  const response = requestId ? { ...result.response, requestId } : result.response;
  try {
    const stored = await records.complete(record, response, result.writes, result.finishedBy ?? "request");
    if (stored) return { kind: "fresh", response, expiresAt: stored.expiresAt };
  } catch (error) {
    await records.release(record, "error").catch(() => {});
    throw error;
  }
  const current = await currentAnswer(record);
  if (gatewayAnswered(result) && isWriteOff(current)) {
    // A definite outcome in hand for an operation someone else wrote off: the reconciliation reports the
    // gateway's charge (it has no app charge); say so now, loudly, with what identifies it.
    log.error(
      { requestId: String(record.id), apiClientId: record.apiClientId, idempotencyKey: record.idempotencyKey },
      "the gateway answered after the operation was abandoned; see the ledger",
    );
  }
  return current;
}

const leaseOf = (record: IdempotencyRecord) =>
  record.phase.name === "held" || record.phase.name === "lease_expired" ? record.phase.leaseExpiresAt : new Date(0);

/** The record, with a lease long enough for the work (renewed if this process stalled); null if it lost the claim. */
async function withTimeToWork(record: IdempotencyRecord, taker: Taker): Promise<IdempotencyRecord | null> {
  const now = new Date();
  if (records.deadlineOf(leaseOf(record)).getTime() - now.getTime() >= MIN_WORK_MS) return record;
  return records.renew(record, now, taker);
}

const replayOf = (
  record: IdempotencyRecord,
  { response, finishedBy }: { response: StoredResponse; finishedBy: FinishedBy },
) => ({ kind: "replay", response, finishedBy, expiresAt: record.expiresAt }) as const;

/** Someone else moved the record: answer what it holds now. */
async function currentAnswer(record: IdempotencyRecord): Promise<IdempotentOutcome> {
  const current = await findById(record.id);
  if (current?.phase.name === "complete") return replayOf(current, current.phase);
  return { kind: "in_progress", since: record.createdAt, expiresAt: record.expiresAt };
}
