import type { FinishedBy, IdempotencyRecord } from "./lifecycle";
import { findUnfinished as findUnfinishedRecords } from "./queries";
import * as records from "./records";
import { workUnderClaim } from "./runIdempotent";
import type { HeldClaim, WorkResult } from "./types";

export type RecoveryResult =
  /** This call finished the record, as `finishedBy` says. */
  | { kind: "finished"; finishedBy: FinishedBy }
  /** `settle` could not tell yet (the gateway's answer is unproven): released, to be asked again later. */
  | { kind: "unproven" }
  /** A retry or another sweeper moved the record first; nothing was written here. */
  | { kind: "lost" };

/**
 * Finishes a record nobody else is finishing (found by findUnfinished): takes
 * it over under the next attempt, so that no stalled holder can complete it any
 * more, asks `settle` what happened (the gateway, under the derived key), and
 * stores that answer. Says whether this call finished the record, so a sweeper
 * counts only what it did.
 */
export async function finishUnfinished(
  record: IdempotencyRecord,
  settle: (held: HeldClaim) => Promise<WorkResult>,
): Promise<RecoveryResult> {
  const taken = await records.take(record, new Date(), "recovery");
  if (!taken) return { kind: "lost" };
  let finishedBy: FinishedBy = "request";
  const outcome = await workUnderClaim(
    taken,
    async (held) => {
      const result = await settle(held);
      if (result.kind === "complete") finishedBy = result.finishedBy ?? "request";
      return result;
    },
    { taker: "recovery" },
  );
  switch (outcome.kind) {
    case "fresh":
      return { kind: "finished", finishedBy };
    case "unknown_outcome":
      return { kind: "unproven" };
    default:
      return { kind: "lost" };
  }
}

/** Records nobody is finishing: in progress, first attempted `dueAfterMs` ago or more, with no live lease. */
export function findUnfinished(dueAfterMs: number, limit: number, now = new Date()): Promise<IdempotencyRecord[]> {
  return findUnfinishedRecords(now, dueAfterMs, limit);
}
