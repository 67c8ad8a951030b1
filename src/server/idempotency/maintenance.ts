/**
 * Writes to records outside the protocol's own flow, for the ledger: correcting a write-off the gateway
 * contradicted (lifecycle.ts, `correct`). Each is one fenced statement, sent in the caller's transaction.
 */
export { correctWriteOffStatement } from "./records";
