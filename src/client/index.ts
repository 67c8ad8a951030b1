/**
 * The TypeScript client for the Charges API (Node 18+ and browsers; no
 * dependencies beyond fetch).
 *
 * ┌──────────────────────────────────────────────────────────────────────────┐
 * │ ONE Idempotency-Key PER LOGICAL OPERATION, REUSED ON EVERY RETRY.        │
 * │                                                                          │
 * │ A timeout does not mean the charge failed: the server (or the gateway)   │
 * │ may still be working on it. A retry with a NEW key is a new operation to │
 * │ the server, so it charges the customer again. That is exactly how the    │
 * │ double-charge incident happened. charges.create() and refunds.create()   │
 * │ make the key once, up front, and send it on every attempt; give the      │
 * │ client a store and a reference to make the operation survive a restart.  │
 * └──────────────────────────────────────────────────────────────────────────┘
 *
 * The SDK shares two files with the server, src/server/http/errorRegistry.ts and
 * idempotencyProtocol.ts: both import nothing, so the SDK stays browser-safe.
 * The file-backed store is Node-only and lives apart: src/client/fileOperationStore.
 */
export { ChargesClient, type ChargesClientOptions } from "./ChargesClient";
export {
  ChargeDeadlineError,
  ChargesApiError,
  InvalidIdempotencyKeyError,
  OperationDeadlineError,
  OperationExpiredError,
  OperationMismatchError,
  RefundDeadlineError,
} from "./errors";
export type { CreateOptions, KeyLifetime, MoneyOperations } from "./moneyOperations";
export {
  MemoryOperationStore,
  type MoneyResource,
  type OperationStore,
  type StoredOperation,
} from "./operationStore";
export type {
  ApiErrorBody,
  Charge,
  ChargeResult,
  CreateChargeParams,
  CreateRefundParams,
  OperationResult,
  OperationState,
  Refund,
  RefundReason,
  RefundResult,
} from "./types";
