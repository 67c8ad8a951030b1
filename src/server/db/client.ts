import "server-only";
import { PrismaMariaDb } from "@prisma/adapter-mariadb";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { PrismaClient } from "~/generated/prisma/client";
import { parseMysqlUrl } from "~/lib/mysqlUrl";
import { FailoverPool, type QueryPool } from "./failover";
import { trackPoolUsage } from "./poolUsage";

/**
 * The one database pool and Prisma client of the process (kept across Next.js
 * hot reloads). Prisma reads and writes DATETIME values as UTC; raw SQL must
 * compare them with UTC_TIMESTAMP(), never NOW().
 */
function createDatabase() {
  const { hosts, ...credentials } = parseMysqlUrl(env.DATABASE_URL);
  const options = {
    ...credentials,
    connectionLimit: env.DATABASE_POOL_SIZE,
    // Fail fast when the database is gone instead of queueing requests for long.
    acquireTimeout: 5_000,
    connectTimeout: 5_000,
    ...(env.DATABASE_LOCK_WAIT_TIMEOUT_S === undefined
      ? {}
      : { sessionVariables: { innodb_lock_wait_timeout: env.DATABASE_LOCK_WAIT_TIMEOUT_S } }),
  };
  // One host: its pool. Several (a cluster's nodes): one pool each, used in order while they answer.
  const failover = hosts.length > 1 ? new FailoverPool(hosts.map((h) => ({ ...options, ...h }))) : undefined;
  const pool: QueryPool = failover ?? mariadb.createPool({ ...options, ...hosts[0]! });

  const pools = failover ? failover.nodes.map((n) => n.pool) : [pool as mariadb.Pool];
  const usage = trackPoolUsage(pools, env.DATABASE_POOL_SIZE);
  // The text protocol sends a statement in one round trip; the binary one
  // prepares, executes and closes it (three), and without a prepare cache, which
  // Prisma turns off because the driver leaked statements, that is every time.
  // (A FailoverPool passes for a pool: the adapter calls getConnection, query and execute only.)
  const prisma = new PrismaClient({ adapter: new PrismaMariaDb(pool as mariadb.Pool, { useTextProtocol: true }) });
  return { prisma, pool, usage };
}

const globalForDb = globalThis as unknown as { database?: ReturnType<typeof createDatabase> };
export const database = globalForDb.database ?? createDatabase();
if (env.NODE_ENV !== "production") globalForDb.database = database;

export const db = database.prisma;
export const poolUsage = database.usage;
export type Db = typeof db;

/** Closes the client and its pool (the pool exists, and keeps the process alive, even if no query ran). */
export async function disconnectDatabase() {
  await database.prisma.$disconnect();
  if (!database.pool.closed) await database.pool.end();
}
