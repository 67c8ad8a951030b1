/**
 * The read side of the idempotency records, for the dashboard's read model (src/server/requests), the ledger and
 * the sweeper: the decoder of a record's phase and the columns that make each phase (the lifecycle's), a record by
 * id, what is in progress, the events of a key's timeline, and pruning. Nothing here takes part in the protocol
 * (./index.ts).
 */
export { countInProgress, findById as findRecord, recordsInProgress } from "./queries";
export { pruneBatch as pruneExpiredBatch } from "./records";
export { eventCounts, eventsOf, flushEvents, pruneEvents, type EventKind, type TimelineEvent } from "./events";
export {
  decodeRecord,
  ImpossibleRecordError,
  keyFromBytes,
  keyToBytes,
  phaseCondition,
  phaseKey,
  RECORD_COLUMNS,
  type IdempotencyRecord,
  type Phase,
  type PhaseFilter,
  type PhaseKey,
  type PhaseName,
  type RecordRow,
} from "./lifecycle";
export { canonicalJson } from "./canonicalHash";
