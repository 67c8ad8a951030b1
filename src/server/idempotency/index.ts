/**
 * Idempotency, the protocol: what every money route uses, the same way (src/server/operations). Run a request
 * under its key (runIdempotent: claim, replay, 409, 422, work under the claim, completion with the money rows),
 * settle what a client asks about (findOperation), finish what nobody is finishing (findUnfinished,
 * finishUnfinished), and the types of a claim and of what work comes to. What the dashboard, the ledger and the
 * sweeper read of records and their events is `./reading`; storage (records.ts) and the in-process answers
 * (memory.ts) stay private to this folder.
 */
export { runIdempotent, type WaitOptions } from "./runIdempotent";
export { attemptFence, timing } from "./records";
export { finishUnfinished, findUnfinished, type RecoveryResult } from "./recovery";
export { findOperation, type OperationState } from "./queries";
export { noteAnswered } from "./events";
export { requestHash } from "./canonicalHash";
export type { FinishedBy, IdempotencyRecord } from "./lifecycle";
export type {
  Admission,
  ClaimInput,
  CompletionEvent,
  HeldClaim,
  IdempotentOutcome,
  StoredResponse,
  WorkResult,
} from "./types";
