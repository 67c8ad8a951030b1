import type { Socket } from "node:net";
import type { PoolConnection, TypeCastFunction } from "mariadb";
import { database } from "./client";

/** One SQL statement with its `?` values, for the driver-level helpers below. */
export type Statement = { sql: string; values: unknown[] };

/** Dates as DATETIME literals in UTC, the way Prisma stores them. */
const utcValues = (values: unknown[]) =>
  values.map((v) => (v instanceof Date ? v.toISOString().slice(0, 23).replace("T", " ") : v));

/**
 * One INSERT on its own (autocommit), returning the row's AUTO_INCREMENT id.
 * Prisma's create takes four round trips for this (BEGIN, INSERT, SELECT,
 * COMMIT), holding the connection through each while a busy event loop gets
 * to the answers; the claim of an idempotency key, made by every attempt and
 * every retry, is the statement where that shows. Dates are sent as UTC;
 * errors are the driver's own (errno 1062 for a duplicate key).
 */
export async function insertReturningId({ sql, values }: Statement): Promise<bigint> {
  const result = (await database.pool.query({ sql, insertIdAsNumber: false }, utcValues(values))) as {
    insertId: bigint | number;
  };
  return BigInt(result.insertId);
}

/** One statement on its own (autocommit); the number of rows it changed. */
export async function execute({ sql, values }: Statement): Promise<number> {
  const result = (await database.pool.query(sql, utcValues(values))) as { affectedRows?: number };
  return Number(result.affectedRows ?? 0);
}

/**
 * The rows of one SELECT (autocommit), with DATETIME columns read as UTC (how
 * Prisma writes them) whatever the process's time zone. One round trip through
 * the driver: Prisma's findUnique costs several times the CPU of the lookup
 * itself, and the replay path is made of this one read.
 */
export async function queryRows<Row>({ sql, values }: Statement): Promise<Row[]> {
  return (await database.pool.query({ sql, dateStrings: true, typeCast: utcDatetimes }, utcValues(values))) as Row[];
}

const utcDatetimes: TypeCastFunction = (column, next) => {
  if (column.type !== "DATETIME" && column.type !== "TIMESTAMP") return next();
  const text = column.string();
  return text === null ? null : new Date(`${text.replace(" ", "T")}Z`);
};

/** One transaction's statements, through one connection (inTransaction). */
export type Transaction = {
  rows<Row>(statement: Statement): Promise<Row[]>;
  execute(statement: Statement): Promise<number>;
};

/**
 * Runs `work` as one transaction on one connection at the isolation level
 * asked for: committed when `work` returns, rolled back when it throws.
 * Statements read and write dates as UTC, like queryRows and execute. For the
 * sweeper's bookkeeping, which must read what it changes (a request's own
 * writes go through pipelinedTransaction, in two round trips).
 */
export async function inTransaction<T>(
  isolation: "READ COMMITTED" | "REPEATABLE READ",
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  const connection = await database.pool.getConnection();
  const tx: Transaction = {
    rows: async ({ sql, values }) =>
      await connection.query({ sql, dateStrings: true, typeCast: utcDatetimes }, utcValues(values)),
    execute: async ({ sql, values }) =>
      Number(((await connection.query(sql, utcValues(values))) as { affectedRows?: number }).affectedRows ?? 0),
  };
  let reusable = true;
  try {
    await connection.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`);
    await connection.beginTransaction();
    const result = await work(tx);
    await connection.commit();
    return result;
  } catch (error) {
    // A connection whose rollback failed is in an unknown state: it never goes back to the pool.
    reusable = await connection.rollback().then(
      () => true,
      () => false,
    );
    throw error;
  } finally {
    await (reusable ? connection.release() : connection.destroy());
  }
}

/**
 * Issues pipelined statements so that they leave in one socket write. The
 * driver writes each command as it is issued, one syscall each, and on this
 * machine a socket write is the single largest cost of a charge beyond the
 * framework's (bench/README.md, overhead profile); corked, the kernel gets
 * them in one writev. The bytes and their order are the same either way. The
 * socket is reached through the driver's `__tests` accessor (mariadb is
 * pinned); where it is missing, each statement is written on its own, as before.
 */
function inOneWrite<T>(connection: PoolConnection, issue: () => T): T {
  type WithSocket = { __tests?: { getSocket?: () => Socket | undefined } };
  const socket = (connection as unknown as WithSocket).__tests?.getSocket?.();
  socket?.cork();
  try {
    return issue();
  } finally {
    socket?.uncork();
  }
}

/** Rows a statement touched: affected rows for a write, returned rows for a SELECT. */
const touched = (result: unknown) =>
  Array.isArray(result) ? result.length : Number((result as { affectedRows?: number }).affectedRows ?? 0);

/**
 * Runs the statements as one transaction in two round trips, however many
 * there are: the statements go out together (the driver pipelines them), then
 * COMMIT if all succeeded and `commitIf` accepts the rows each touched, else
 * ROLLBACK. True when committed. A failed statement's driver error (errno
 * 1062, 1213, ...) is thrown after the rollback.
 *
 * Autocommit is off for the whole transaction, not just a START TRANSACTION
 * ahead of the statements: when InnoDB picks one of them as a deadlock victim
 * it rolls the transaction back, and with autocommit on the statements already
 * queued behind it would then each commit on their own (a completed record
 * naming a charge whose INSERT was rolled back; test/moneyPaths.test.ts). With
 * autocommit off they open a new transaction that the ROLLBACK undoes.
 *
 * Prisma sends each statement of a transaction after the previous one's answer
 * has been through the event loop; when that loop is busy, the connection is
 * held for every one of those waits. Charge completions are where that filled
 * the pool (see bench/README.md, storm).
 */
export async function pipelinedTransaction(
  statements: Statement[],
  commitIf: (touched: number[]) => boolean,
): Promise<boolean> {
  const connection = await database.pool.getConnection();
  let settled: PromiseSettledResult<unknown>[];
  let committed = false;
  try {
    const [autocommitOff, ...results] = await Promise.allSettled(
      inOneWrite(connection, () => [
        connection.query("SET autocommit = 0"),
        ...statements.map(({ sql, values }) => connection.query(sql, utcValues(values))),
      ]),
    );
    settled = results;
    committed =
      autocommitOff!.status === "fulfilled" &&
      settled.every((r) => r.status === "fulfilled") &&
      commitIf(settled.map((r) => (r.status === "fulfilled" ? touched(r.value) : 0)));
    // In this order: switching autocommit back on would commit an open transaction.
    await Promise.all(
      inOneWrite(connection, () => [
        connection.query(committed ? "COMMIT" : "ROLLBACK"),
        connection.query("SET autocommit = 1"),
      ]),
    );
  } catch (error) {
    // The transaction's state is unknown: this connection never goes back to the pool.
    await connection.destroy();
    throw error;
  }
  await connection.release();
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) throw failure.reason;
  return committed;
}
