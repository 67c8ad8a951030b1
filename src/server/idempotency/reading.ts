/**
 * The read side of the idempotency records, for the dashboard's read model (src/server/requests), the ledger and
 * the sweeper: the decoder of a record's phase and the columns that make each phase (the lifecycle's), a record by
 * id, and what is in progress. Nothing here writes, nor takes part in the protocol (./index.ts); the writes
 * outside the protocol's flow are ./maintenance.ts.
 */
export { countInProgress, findById as findRecord, recordsInProgress } from "./queries";
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
