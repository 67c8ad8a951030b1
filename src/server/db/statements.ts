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
  // The id comes as a BigInt (the driver's default, insertIdAsNumber off). Options given per query would cost
  // a copy of the connection's ~80 options on every statement (the driver's Parser), so none are.
  const result = (await database.pool.query(sql, utcValues(values))) as {
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

/** For statements sent with `dateStrings: true`, whose `next()` is then the DATETIME's text in both protocols. */
const utcDatetimes: TypeCastFunction = (column, next) => {
  if (column.type !== "DATETIME" && column.type !== "TIMESTAMP") return next();
  // Not column.string(): a prepared statement's row is binary, and its DATETIME is not text (insertThen).
  const text = next() as string | null;
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
 * writes go through atomically, in one round trip).
 */
export async function inTransaction<T>(
  isolation: "READ COMMITTED" | "REPEATABLE READ",
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  return onOneConnection(async (connection) => {
    const tx: Transaction = {
      rows: async ({ sql, values }) =>
        await connection.query({ sql, dateStrings: true, typeCast: utcDatetimes }, utcValues(values)),
      execute: async ({ sql, values }) =>
        Number(((await connection.query(sql, utcValues(values))) as { affectedRows?: number }).affectedRows ?? 0),
    };
    await connection.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`);
    await connection.beginTransaction();
    try {
      const result = await work(tx);
      await connection.commit();
      return result;
    } catch (error) {
      await connection.rollback().catch(() => {}); // if it failed, onOneConnection closes the connection
      throw error;
    }
  });
}

/** The server's status flags (mariadb's ServerStatus) that say what a connection was left in. */
const IN_TRANSACTION = 1;
const AUTOCOMMIT = 2;

/**
 * Runs `work` on one connection of the pool and gives the connection back.
 * A connection left in a transaction or with autocommit off, which no caller
 * means to leave, is closed instead (the server rolls back what it held), so
 * that nothing of one request's transaction can be committed by the next
 * user of the connection. A failure that says the database is unavailable
 * takes its node out of use on a cluster (FailoverPool), as a pool query does.
 */
async function onOneConnection<T>(work: (connection: PoolConnection) => Promise<T>): Promise<T> {
  const connection = await database.pool.getConnection();
  try {
    return await work(connection);
  } catch (error) {
    database.pool.noteFailure?.(connection, error);
    throw error;
  } finally {
    const status = connection.info?.status ?? 0;
    const clean = (status & IN_TRANSACTION) === 0 && (status & AUTOCOMMIT) !== 0;
    await Promise.resolve(clean ? connection.release() : connection.destroy()).catch(() => {});
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

/**
 * An INSERT and then a SELECT, each on its own (autocommit), sent in one
 * socket write on one connection: what the SELECT finds after the INSERT ran,
 * whether the INSERT succeeded or failed. The claim of a key is this: the
 * INSERT decides who owns it, and when it fails on the unique index the SELECT
 * has already read the record that won, with no second round trip (its
 * `ROW_COUNT() < 1` keeps a fresh claim from reading its own row back:
 * records.ts, claimReadStatement). A keyless claim reads the rollout mode
 * this way (records.claimKeyless). After a successful INSERT, `rows` is null
 * if the read failed: the row is the caller's either way.
 */
export async function insertThenRead<Row>(
  insert: Statement,
  read: Statement,
): Promise<{ insertId: bigint; rows: Row[] | null } | { insertError: unknown; rows: Row[] }> {
  return onOneConnection(async (connection) => {
    const [inserted, rows] = await Promise.allSettled(
      inOneWrite(connection, () => [
        connection.query(insert.sql, utcValues(insert.values)), // the id as a BigInt, as in insertReturningId
        connection.query({ sql: read.sql, dateStrings: true, typeCast: utcDatetimes }, utcValues(read.values)),
      ]),
    );
    // A row inserted is the caller's whatever happened to the read: it must never be left unknown to its owner.
    if (inserted.status === "fulfilled") {
      const insertId = BigInt((inserted.value as { insertId: bigint }).insertId);
      return { insertId, rows: rows.status === "fulfilled" ? (rows.value as Row[]) : null };
    }
    if (rows.status === "rejected") throw rows.reason;
    return { insertError: inserted.reason, rows: rows.value as Row[] };
  });
}

/**
 * An INSERT and, if it inserted, `then` in the same transaction, in one round trip and one commit: a compound
 * statement. `then` is a block (BEGIN ... END, ending with a SELECT: its rows) that reads the new row's id as
 * `v_inserted_id`; the transaction runs at READ COMMITTED, so that it locks what `then` locks and no gaps. `then`
 * may decline the row (SET v_declined = TRUE): the INSERT and its writes are rolled back, and its rows are
 * answered as `declined`. If the INSERT met a duplicate key, nothing is written and `read` answers instead (the
 * row that holds the key, read right after). Any other failure of either rolls both back, the INSERT too, and is
 * raised: nothing of a failed call is left. A claim that makes writes of its own at the same commit is this
 * (idempotency/records.ts).
 */
export async function insertThen<ThenRow, ReadRow>(
  insert: Statement,
  then: Statement,
  read: Statement,
): Promise<{ insertId: bigint; rows: ThenRow[] } | { declined: ThenRow[] } | { duplicate: ReadRow[] }> {
  const sql = `BEGIN NOT ATOMIC
    DECLARE v_inserted_id BIGINT UNSIGNED DEFAULT NULL;
    DECLARE v_declined BOOLEAN DEFAULT FALSE;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; SET autocommit = 1; RESIGNAL; END;
    SET autocommit = 0;
    SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
    START TRANSACTION;
    BEGIN
      DECLARE EXIT HANDLER FOR 1062 SET v_inserted_id = NULL;
      ${insert.sql};
      SET v_inserted_id = LAST_INSERT_ID();
    END;
    SELECT v_inserted_id AS inserted_id;
    IF v_inserted_id IS NULL THEN
      ROLLBACK;
      SET autocommit = 1;
      ${read.sql};
    ELSE
      ${then.sql};
      IF v_declined THEN
        ROLLBACK;
        SET autocommit = 1;
        SELECT TRUE AS declined;
      ELSE
        COMMIT;
        SET autocommit = 1;
      END IF;
    END IF;
  END`;
  const values = utcValues([...insert.values, ...read.values, ...then.values]);
  // A compound statement, prepared once per connection (the driver's cache): MariaDB then parses it once, not
  // on every call, about a third of the CPU such a block costs it (bench/README.md).
  const [[inserted], rows, declined] = (await onOneConnection((c) =>
    c.execute({ sql, dateStrings: true, typeCast: utcDatetimes }, values),
  )) as [[{ inserted_id: bigint | number | null }], unknown[], unknown];
  if (inserted?.inserted_id === null || inserted?.inserted_id === undefined) return { duplicate: rows as ReadRow[] };
  if (Array.isArray(declined)) return { declined: rows as ThenRow[] };
  return { insertId: BigInt(inserted.inserted_id), rows: rows as ThenRow[] };
}

/**
 * Runs the statements as one transaction in ONE round trip, however many there
 * are: a compound statement (MariaDB's BEGIN NOT ATOMIC) that commits only if
 * the first statement (the fence) changed exactly one row and every other
 * changed at least one, and rolls back otherwise. True when committed. A
 * failing statement rolls the whole transaction back in the server and its
 * error (errno 1062, 1213, ...) is re-raised to the caller; a certification
 * failure at COMMIT on Galera too. Nothing runs after a failure, and no
 * transaction is ever left open on the connection (onOneConnection checks).
 *
 * One round trip matters twice: a request's completion holds a connection only
 * while the server works (a busy event loop never holds it between statements:
 * see bench/README.md, storm), and each round trip is a socket write and a
 * read, which on this machine cost more than the statements (overhead profile).
 * Prepared once per connection, as insertThen is.
 */
export async function atomically(statements: Statement[]): Promise<boolean> {
  const landedIf = (rowCount: string) => `IF ROW_COUNT() ${rowCount} THEN SET landed = FALSE; END IF;`;
  const [fence, ...writes] = statements;
  if (!fence) throw new Error("atomically: no statements");
  // Autocommit off inside as well: should a statement's error ever not reach the handler (a cluster's abort of
  // the transaction), the statements after it still could not commit on their own.
  const sql = `BEGIN NOT ATOMIC
    DECLARE landed BOOLEAN DEFAULT TRUE;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; SET autocommit = 1; RESIGNAL; END;
    SET autocommit = 0;
    START TRANSACTION;
    ${fence.sql};
    ${landedIf("<> 1")}
    ${writes.map((w) => `IF landed THEN ${w.sql}; ${landedIf("< 1")} END IF;`).join("\n")}
    IF landed THEN COMMIT; ELSE ROLLBACK; END IF;
    SET autocommit = 1;
    SELECT landed AS committed;
  END`;
  const values = utcValues(statements.flatMap((s) => s.values));
  const [[result]] = (await onOneConnection((c) => c.execute(sql, values))) as [[{ committed: number | bigint }]];
  return Number(result.committed) === 1;
}

/**
 * A compound statement (MariaDB's BEGIN NOT ATOMIC) that ends with one SELECT, in one round trip on one
 * connection: its rows. For a short transaction that must read under a lock and decide in the server
 * (refunds/holds.ts); like atomically, it must leave no transaction open (onOneConnection checks).
 */
export async function compoundRows<Row>({ sql, values }: Statement): Promise<Row[]> {
  const [rows] = (await onOneConnection((c) =>
    c.execute({ sql, dateStrings: true, typeCast: utcDatetimes }, utcValues(values)),
  )) as [Row[]];
  return rows;
}
