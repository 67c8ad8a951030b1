import { chargeOperation } from "~/server/charges/chargeOperation";
import { refundOperation } from "~/server/refunds/refundOperation";
import type { HeldClaim, WorkResult } from "~/server/idempotency";
import { settleOperation } from "~/server/operations/finality";
import type { MoneyOperation } from "~/server/operations/moneyOperation";

/**
 * Every money-moving POST, by the route stored with its records: the one list the sweeper, the ledger, the
 * request log, the rollout counts and the API reference go by. A new money route is one line here.
 */
/** What is known of a money route beyond its own requests: its name, how to settle its records, its money and docs. */
type RegisteredOperation = Pick<
  MoneyOperation<unknown>,
  "route" | "settle" | "schema" | "unknownOutcome" | "moneyTable" | "doc"
>;

export const MONEY_OPERATIONS: readonly RegisteredOperation[] = [chargeOperation, refundOperation];

export const MONEY_ROUTES = MONEY_OPERATIONS.map((operation) => operation.route);

/** The operation whose records are stored under `route`. */
function operationOf(route: string): RegisteredOperation {
  const operation = MONEY_OPERATIONS.find((o) => o.route === route);
  if (!operation) throw new Error(`no money route ${route}`);
  return operation;
}

/**
 * What happened to a record nobody finished, asked of its route's gateway call (the sweeper, the ledger), under the
 * one rule of write-offs (operations/finality.ts); `dueAfterMs` as there.
 */
export function settleRecord(held: HeldClaim, dueAfterMs?: number): Promise<WorkResult> {
  return settleOperation(operationOf(held.record.route), held, dueAfterMs);
}
