/**
 * The read side of the idempotency records, for the dashboard's read model, the ledger and the sweeper: records
 * decoded by the lifecycle (the one decoder of a record's phase), their lists and counts, the events of a key's
 * timeline, and pruning. Nothing here takes part in the protocol (./index.ts).
 */
export {
  answersWithoutTheirRow,
  countInProgress,
  countRecords,
  findRecord,
  listRecords,
  pruneExpiredBatch,
  recordsInProgress,
  recordsWithKeyPrefix,
  type ListedRecord,
} from "./queries";
export { eventCounts, eventsOf, flushEvents, pruneEvents, type EventKind, type TimelineEvent } from "./events";
export {
  decodeRecord,
  displayKey,
  ImpossibleRecordError,
  keyFromBytes,
  keyToBytes,
  phaseDisplay,
  phaseWhere,
  PHASE_DISPLAY,
  type Phase,
  type PhaseDisplayKey,
  type PhaseFilter,
  type PhaseName,
  type RecordFilter,
} from "./lifecycle";
export { canonicalJson } from "./canonicalHash";
