/**
 * Writes outside the protocol's own flow, for the sweeper and the ledger: pruning expired records (a batch of
 * `expire`) and old key events, writing the key events held in memory (before a `--once` process exits), and
 * correcting a write-off the gateway contradicted (lifecycle.ts, `correct`). Each keeps its fence.
 */
export { correctWriteOffStatement, pruneBatch as pruneExpiredBatch } from "./records";
export { flushEvents, pruneEvents } from "./events";
