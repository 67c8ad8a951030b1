/**
 * Idempotency: the protocol (runIdempotent), recovery of records nobody
 * finishes (finishUnfinished), and the record lifecycle everything else reads
 * records through. Storage (records.ts) and the in-process answers (memory.ts)
 * stay private to this folder.
 */
export { runIdempotent, type WaitOptions } from "./runIdempotent";
export { finishUnfinished, findUnfinished, type RecoveryResult } from "./recovery";
export {
  answersWithoutTheirRow,
  countInProgress,
  countRecords,
  findOperation,
  findRecord,
  listRecords,
  pruneExpiredBatch,
  recordsInProgress,
  recordsWithKeyPrefix,
  type ListedRecord,
  type OperationState,
} from "./queries";
export {
  eventCounts,
  eventsOf,
  flushEvents,
  noteAnswered,
  pruneEvents,
  type EventKind,
  type TimelineEvent,
} from "./events";
export {
  decodeRecord,
  displayKey,
  ImpossibleRecordError,
  keyFromBytes,
  keyToBytes,
  phaseDisplay,
  phaseWhere,
  PHASE_DISPLAY,
  type FinishedBy,
  type IdempotencyRecord,
  type Phase,
  type PhaseDisplayKey,
  type PhaseFilter,
  type PhaseName,
  type RecordFilter,
} from "./lifecycle";
export { canonicalJson, requestHash } from "./canonicalHash";
export type { Admission, ClaimInput, HeldClaim, IdempotentOutcome, StoredResponse, WorkResult } from "./types";
