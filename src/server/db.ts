import { PrismaMariaDb } from "@prisma/adapter-mariadb";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { PrismaClient } from "~/generated/prisma/client";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { trackPoolUsage } from "./poolUsage";

/**
 * The one database pool and Prisma client of the process (kept across Next.js
 * hot reloads). Prisma reads and writes DATETIME values as UTC; raw SQL must
 * compare them with UTC_TIMESTAMP(), never NOW().
 */
function createDatabase() {
  const pool = mariadb.createPool({
    ...mysqlConnectionOptions(env.DATABASE_URL),
    connectionLimit: env.DATABASE_POOL_SIZE,
    // Fail fast when the database is gone instead of queueing requests for long.
    acquireTimeout: 5_000,
    connectTimeout: 5_000,
  });

  const usage = trackPoolUsage(pool, env.DATABASE_POOL_SIZE);
  // The text protocol sends a statement in one round trip; the binary one
  // prepares, executes and closes it (three), and without a prepare cache, which
  // Prisma turns off because the driver leaked statements, that is every time.
  const prisma = new PrismaClient({ adapter: new PrismaMariaDb(pool, { useTextProtocol: true }) });
  return { prisma, pool, usage };
}

const globalForDb = globalThis as unknown as { database?: ReturnType<typeof createDatabase> };
const database = globalForDb.database ?? createDatabase();
if (env.NODE_ENV !== "production") globalForDb.database = database;

export const db = database.prisma;
export const poolUsage = database.usage;
export type Db = typeof db;

/** Closes the client and its pool (the pool exists, and keeps the process alive, even if no query ran). */
export async function disconnectDatabase() {
  await database.prisma.$disconnect();
  if (!database.pool.closed) await database.pool.end();
}
/** One SQL statement with its `?` values, for the driver-level helpers below. */
export type Statement = { sql: string; values: unknown[] };

/** Dates as DATETIME literals in UTC, the way Prisma stores them. */
const utcValues = (values: unknown[]) => values.map((v) => (v instanceof Date ? v.toISOString().slice(0, 23).replace("T", " ") : v));

/**
 * One INSERT on its own (autocommit), returning the row's AUTO_INCREMENT id.
 * Prisma's create takes four round trips for this (BEGIN, INSERT, SELECT,
 * COMMIT), holding the connection through each while a busy event loop gets
 * to the answers; the claim of an idempotency key, made by every attempt and
 * every retry, is the statement where that shows. Dates are sent as UTC;
 * errors are the driver's own (errno 1062 for a duplicate key).
 */
export async function insertReturningId({ sql, values }: Statement): Promise<bigint> {
  const result = (await database.pool.query({ sql, insertIdAsNumber: false }, utcValues(values))) as { insertId: bigint | number };
  return BigInt(result.insertId);
}

/**
 * Runs the statements as one transaction in two round trips, however many
 * there are: START TRANSACTION and the statements go out together (the driver
 * pipelines them), then COMMIT if all succeeded and `commitIf` accepts their
 * affected-row counts, else ROLLBACK. True when committed. A failed statement's
 * driver error (errno 1062, 1213, ...) is thrown after the rollback.
 *
 * Prisma sends each statement of a transaction after the previous one's answer
 * has been through the event loop; when that loop is busy, the connection is
 * held for every one of those waits. Charge completions are where that filled
 * the pool (see bench/README.md, storm).
 */
export async function pipelinedTransaction(statements: Statement[], commitIf: (affectedRows: number[]) => boolean): Promise<boolean> {
  const connection = await database.pool.getConnection();
  let settled: PromiseSettledResult<unknown>[];
  let committed = false;
  try {
    settled = await Promise.allSettled([
      connection.query("START TRANSACTION"),
      ...statements.map(({ sql, values }) => connection.query(sql, utcValues(values))),
    ]);
    const affected = settled.slice(1).map((r) => (r.status === "fulfilled" ? Number((r.value as { affectedRows?: number }).affectedRows ?? 0) : 0));
    committed = settled.every((r) => r.status === "fulfilled") && commitIf(affected);
    await connection.query(committed ? "COMMIT" : "ROLLBACK");
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
