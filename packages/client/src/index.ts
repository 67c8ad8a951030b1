/**
 * The TypeScript client for the Charges API (Node 20+ and browsers; no
 * dependencies beyond fetch), the package @charges/client.
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
 * The package imports nothing from outside itself. The server imports two of its files, the API's contract:
 * errorRegistry.ts (every error code and what a client should do) and idempotencyProtocol.ts (the key's rule).
 * The file-backed store is Node-only and lives apart: @charges/client/fileOperationStore.
 */
export { ChargesClient, type ChargesClientOptions } from "./ChargesClient.js";
export { API_ERROR_CODES, API_ERRORS, type ApiErrorCode, isApiErrorCode } from "./errorRegistry.js";
export {
  ChargeDeadlineError,
  ChargesApiError,
  InvalidIdempotencyKeyError,
  OperationDeadlineError,
  OperationExpiredError,
  OperationMismatchError,
  RefundDeadlineError,
} from "./errors.js";
export type { Event, Events, List, ListParams } from "./lists.js";
export type { CreateOptions, KeyLifetime, MoneyOperations } from "./moneyOperations.js";
export {
  MemoryOperationStore,
  type MoneyResource,
  type OperationStore,
  type StoredOperation,
} from "./operationStore.js";
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
} from "./types.js";
