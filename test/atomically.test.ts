/**
 * `atomically` (src/server/db/statements.ts), the one-round-trip transaction
 * that stores a record's answer with the charge, and `insertThen`, the claim
 * that makes its operation's writes at its own commit (a refund's hold): all
 * or nothing, whatever fails, and never a transaction left open on a pooled
 * connection.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { atomically, database, driverErrorCode, execute, insertThen, queryRows } from "~/server/db";
import { closeConnections } from "./helpers";

const table = `test_atomically_${process.pid}`;
const fence = (id: number, from: string, to: string) => ({
  sql: `UPDATE ${table} SET state = ? WHERE id = ? AND state = ?`,
  values: [to, id, from],
});
const write = (id: number, note: string) => ({
  sql: `INSERT INTO ${table}_writes (id, note) VALUES (?, ?)`,
  values: [id, note],
});
const state = async (id: number) =>
  (await queryRows<{ state: string }>({ sql: `SELECT state FROM ${table} WHERE id = ?`, values: [id] }))[0]?.state;
const notes = async (id: number) =>
  (await queryRows<{ note: string }>({ sql: `SELECT note FROM ${table}_writes WHERE id = ?`, values: [id] })).map(
    (r) => r.note,
  );

before(async () => {
  await execute({ sql: `CREATE TABLE ${table} (id INT PRIMARY KEY, state VARCHAR(16)) ENGINE=InnoDB`, values: [] });
  await execute({
    sql: `CREATE TABLE ${table}_writes (id INT PRIMARY KEY, note VARCHAR(32)) ENGINE=InnoDB`,
    values: [],
  });
  await execute({
    sql: `CREATE TABLE ${table}_claims (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(16) UNIQUE,
            at DATETIME(6) NOT NULL DEFAULT '2026-12-05 19:00:00.123456') ENGINE=InnoDB`,
    values: [],
  });
  await execute({
    sql: `INSERT INTO ${table} VALUES (1, 'open'), (2, 'open'), (3, 'open'), (4, 'open'), (5, 'open')`,
    values: [],
  });
});
after(async () => {
  await execute({ sql: `DROP TABLE IF EXISTS ${table}, ${table}_writes, ${table}_claims`, values: [] });
  await closeConnections();
});

/** The error a call fails with, or undefined if it succeeds. */
const errorOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: unknown) => e,
  );

/** Every connection of the pool (all of them, so the one atomically used too): autocommit, no transaction open. */
async function assertNoConnectionLeftInATransaction() {
  const connections = await Promise.all(
    Array.from({ length: env.DATABASE_POOL_SIZE }, () => database.pool.getConnection()),
  );
  try {
    for (const c of connections) {
      const [row] = await c.query("SELECT @@in_transaction AS open, @@autocommit AS auto");
      assert.deepEqual([Number(row.open), Number(row.auto)], [0, 1]);
    }
  } finally {
    for (const c of connections) await c.release();
  }
}

describe("atomically", () => {
  test("commits the fence and the writes together", async () => {
    assert.equal(await atomically([fence(1, "open", "done"), write(1, "charge")]), true);
    assert.equal(await state(1), "done");
    assert.deepEqual(await notes(1), ["charge"]);
  });

  test("a fence that matches no row (another attempt moved the record) writes nothing", async () => {
    assert.equal(await atomically([fence(2, "elsewhere", "done"), write(2, "charge")]), false);
    assert.equal(await state(2), "open");
    assert.deepEqual(await notes(2), []);
  });

  test("a write that changes no row undoes the fence", async () => {
    const nothing = { sql: `UPDATE ${table}_writes SET note = 'x' WHERE id = -1`, values: [] };
    assert.equal(await atomically([fence(3, "open", "done"), nothing]), false);
    assert.equal(await state(3), "open");
  });

  test("a failing write undoes everything and its error reaches the caller; no transaction stays open", async () => {
    await execute(write(4, "already there"));
    const error = await errorOf(atomically([fence(4, "open", "done"), write(4, "charge")]));
    assert.equal(driverErrorCode(error), 1062, String(error));
    assert.equal(await state(4), "open");
    assert.deepEqual(await notes(4), ["already there"]);
    await assertNoConnectionLeftInATransaction();
  });

  test("a write that times out on a lock (which rolls back only itself) undoes the fence too", async () => {
    // Another transaction holds the key the write inserts; the write gives up after 1 s with 1205, which in
    // InnoDB rolls back that statement alone and leaves the transaction open: the fence must not commit.
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    try {
      await outside.query("BEGIN");
      await outside.query(`INSERT INTO ${table}_writes (id, note) VALUES (5, 'elsewhere')`);
      const insert = write(5, "charge");
      const slow = { ...insert, sql: `SET STATEMENT innodb_lock_wait_timeout = 1 FOR ${insert.sql}` };
      const error = await errorOf(atomically([fence(5, "open", "done"), slow]));
      assert.equal(driverErrorCode(error), 1205, String(error));
    } finally {
      await outside.query("ROLLBACK");
      await outside.end();
    }
    assert.equal(await state(5), "open");
    assert.deepEqual(await notes(5), []);
    await assertNoConnectionLeftInATransaction();
  });
});

describe("insertThen", () => {
  const claimOf = (k: string) => ({ sql: `INSERT INTO ${table}_claims (k) VALUES (?)`, values: [k] });
  const readOf = (k: string) => ({ sql: `SELECT id, k, at FROM ${table}_claims WHERE k = ?`, values: [k] });
  /** A write keyed by the new row's id, and a SELECT of it: what a refund's hold is to its claim. */
  const noteFor = (note: string) => ({
    sql: `BEGIN
      INSERT INTO ${table}_writes (id, note) VALUES (v_inserted_id + 1000, ?);
      SELECT v_inserted_id + 1000 AS written;
    END`,
    values: [note],
  });
  const claimed = async (k: string) => (await queryRows<{ id: number }>(readOf(k))).map((r) => Number(r.id));

  test("makes the row and its writes at one commit, and answers the writes' rows", async () => {
    const result = await insertThen<{ written: number }, never>(claimOf("a"), noteFor("hold a"), readOf("a"));
    assert.ok("insertId" in result);
    assert.deepEqual(await claimed("a"), [Number(result.insertId)]);
    assert.deepEqual(
      result.rows.map((r) => Number(r.written)),
      [Number(result.insertId) + 1000],
    );
    assert.deepEqual(await notes(Number(result.insertId) + 1000), ["hold a"]);
    await assertNoConnectionLeftInATransaction();
  });

  test("writes that decline the row undo it and themselves, and answer their rows", async () => {
    const declining = {
      sql: `BEGIN
        INSERT INTO ${table}_writes (id, note) VALUES (v_inserted_id + 1000, ?);
        SET v_declined = TRUE;
        SELECT 'too much' AS why;
      END`,
      values: ["declined"],
    };
    const result = await insertThen<{ why: string }, never>(claimOf("x"), declining, readOf("x"));
    assert.ok("declined" in result, JSON.stringify(result));
    assert.deepEqual(
      result.declined.map((r) => r.why),
      ["too much"],
    );
    assert.deepEqual(await claimed("x"), [], "the row is not made");
    const written = await queryRows({ sql: `SELECT id FROM ${table}_writes WHERE note = 'declined'`, values: [] });
    assert.deepEqual(written, [], "nor its writes");
    const again = await insertThen<{ written: number }, never>(claimOf("x"), noteFor("after"), readOf("x"));
    assert.ok("insertId" in again, "the key is free for the next claim");
    await assertNoConnectionLeftInATransaction();
  });

  test("on a duplicate key, answers the row that holds it and writes nothing", async () => {
    const first = await insertThen<unknown, never>(claimOf("b"), noteFor("first"), readOf("b"));
    assert.ok("insertId" in first);
    const second = await insertThen<unknown, { id: number; k: string; at: Date }>(
      claimOf("b"),
      noteFor("second"),
      readOf("b"),
    );
    assert.ok("duplicate" in second);
    // Read as a prepared statement's binary row: its DATETIME still comes back as the UTC date it stores.
    assert.deepEqual(
      second.duplicate.map((r) => [Number(r.id), r.k, r.at.toISOString()]),
      [[Number(first.insertId), "b", "2026-12-05T19:00:00.123Z"]],
    );
    const written = await queryRows({ sql: `SELECT id FROM ${table}_writes WHERE note = 'second'`, values: [] });
    assert.deepEqual(written, []);
    await assertNoConnectionLeftInATransaction();
  });

  test("writes that fail undo the INSERT, and their error reaches the caller (a duplicate of theirs too)", async () => {
    const failing = {
      sql: `BEGIN INSERT INTO ${table}_writes (id, note) VALUES (4, 'clash'); SELECT 1; END`,
      values: [],
    };
    const error = await errorOf(insertThen(claimOf("c"), failing, readOf("c")));
    assert.equal(driverErrorCode(error), 1062, String(error));
    assert.deepEqual(await claimed("c"), []);
    await assertNoConnectionLeftInATransaction();
  });

  test("writes that time out on a lock undo the INSERT", async () => {
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    try {
      await outside.query("BEGIN");
      await outside.query(`SELECT * FROM ${table} WHERE id = 1 FOR UPDATE`);
      const waiting = {
        sql: `BEGIN
          SET STATEMENT innodb_lock_wait_timeout = 1 FOR UPDATE ${table} SET state = 'held' WHERE id = 1;
          SELECT 1;
        END`,
        values: [],
      };
      const error = await errorOf(insertThen(claimOf("d"), waiting, readOf("d")));
      assert.equal(driverErrorCode(error), 1205, String(error));
    } finally {
      await outside.query("ROLLBACK");
      await outside.end();
    }
    assert.deepEqual(await claimed("d"), []);
    await assertNoConnectionLeftInATransaction();
  });
});
