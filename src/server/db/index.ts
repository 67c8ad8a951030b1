/**
 * The database plumbing: the client singleton, the driver-level statements the
 * hot paths send themselves, and what a database error means.
 */
export { database, db, disconnectDatabase, poolUsage, type Db } from "./client";
export {
  atomically,
  compoundRows,
  execute,
  insertReturningId,
  insertThen,
  insertThenRead,
  inTransaction,
  queryRows,
  type Statement,
  type Transaction,
} from "./statements";
export {
  driverErrorCode,
  isDatabaseUnavailable,
  isDuplicateKeyError,
  isLockConflictError,
  retryOnLockConflict,
} from "./errors";
export { slotsBetween, type PoolSlot } from "./poolUsage";
