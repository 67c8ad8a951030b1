import assert from "node:assert/strict";
import { test } from "node:test";
import { driverErrorCode, isDatabaseUnavailable, isDuplicateKeyError, isLockConflictError } from "~/server/db/errors";

// The shapes the app really meets: raw driver errors, and Prisma's adapter errors wrapping them.
const raw = (errno: number, code = "ER_X") => Object.assign(new Error("driver"), { errno, code });
const viaPrisma = (originalCode: string, code = "P2010") => ({
  code,
  meta: { driverAdapterError: { cause: { originalCode } } },
});

test("driverErrorCode reads the server's error number however it is wrapped", () => {
  assert.equal(driverErrorCode(raw(1062)), 1062);
  assert.equal(driverErrorCode(viaPrisma("1213")), 1213);
  assert.equal(driverErrorCode(new Error("outer", { cause: raw(1205) })), 1205);
  assert.equal(driverErrorCode(Object.assign(new Error("refused"), { errno: -111, code: "ECONNREFUSED" })), undefined);
  assert.equal(driverErrorCode("nope"), undefined);
});

test("duplicate key: 1062 raw or through Prisma, P2002, the adapter's kind", () => {
  assert.ok(isDuplicateKeyError(raw(1062)));
  assert.ok(isDuplicateKeyError(viaPrisma("1062")));
  assert.ok(isDuplicateKeyError({ code: "P2002" }));
  assert.ok(isDuplicateKeyError({ meta: { driverAdapterError: { cause: { kind: "UniqueConstraintViolation" } } } }));
  assert.ok(!isDuplicateKeyError(raw(1213)));
  assert.ok(!isDuplicateKeyError(null));
});

test("lock conflicts: deadlock victim and Galera certification failure (1213), lock wait timeout (1205), P2034", () => {
  assert.ok(isLockConflictError(raw(1213)));
  assert.ok(isLockConflictError(viaPrisma("1205")));
  assert.ok(isLockConflictError({ code: "P2034" }));
  assert.ok(!isLockConflictError(raw(1062)));
});

test("the database being unavailable is told apart from a bug", () => {
  const closed = { code: "P2039", meta: { driverAdapterError: { message: "socket has unexpectedly been closed" } } };
  assert.ok(isDatabaseUnavailable(closed));
  assert.ok(isDatabaseUnavailable(raw(1040))); // too many connections
  assert.ok(isDatabaseUnavailable(raw(1047))); // a Galera node outside the primary component, or not synced yet
  assert.ok(isDatabaseUnavailable(Object.assign(new Error("x"), { code: "ECONNREFUSED" })));
  assert.ok(isDatabaseUnavailable(new Error("pool timeout: failed to retrieve a connection from pool after 5000ms")));
  assert.ok(!isDatabaseUnavailable({ code: "P2002", message: "Unique constraint failed" }));
  assert.ok(!isDatabaseUnavailable(new TypeError("x is undefined")));
});
