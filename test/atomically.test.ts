/**
 * `atomically` (src/server/db/statements.ts), the one-round-trip transaction
 * that stores a record's answer with the charge: all or nothing, whatever
 * fails, and never a transaction left open on a pooled connection.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { atomically, database, driverErrorCode, execute, queryRows } from "~/server/db";
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
  await execute({ sql: `INSERT INTO ${table} VALUES (1, 'open'), (2, 'open'), (3, 'open'), (4, 'open')`, values: [] });
});
after(async () => {
  await execute({ sql: `DROP TABLE IF EXISTS ${table}, ${table}_writes`, values: [] });
  await closeConnections();
});

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
    const error = await atomically([fence(4, "open", "done"), write(4, "charge")]).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(driverErrorCode(error), 1062, String(error));
    assert.equal(await state(4), "open");
    assert.deepEqual(await notes(4), ["already there"]);
    // Every pooled connection is back in autocommit with no transaction open.
    const connections = await Promise.all(Array.from({ length: 3 }, () => database.pool.getConnection()));
    for (const c of connections) {
      const [row] = await c.query("SELECT @@in_transaction AS open, @@autocommit AS auto");
      assert.deepEqual([Number(row.open), Number(row.auto)], [0, 1]);
      await c.release();
    }
  });
});
