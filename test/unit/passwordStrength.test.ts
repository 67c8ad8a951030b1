/**
 * Staff password hashes are as strong as OWASP asks against every database but the tests': PASSWORD_SCRYPT_LOG2_N is
 * 17 by default and refused below it unless DATABASE_URL names a test database (the test stacks use 12 to save
 * minutes of CPU).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv } from "~/env";

const database = (name: string) => `mysql://root@127.0.0.1:3306/${name}`;

test("scrypt's N is 2^17 by default, in production as anywhere", () => {
  assert.equal(parseEnv({ DATABASE_URL: database("charges"), NODE_ENV: "production" }).PASSWORD_SCRYPT_LOG2_N, 17);
  assert.equal(parseEnv({ DATABASE_URL: database("charges_test3") }).PASSWORD_SCRYPT_LOG2_N, 17);
});

test("below 2^17 only against a test database", () => {
  const weaker = { PASSWORD_SCRYPT_LOG2_N: "12", NODE_ENV: "test" };
  assert.equal(parseEnv({ ...weaker, DATABASE_URL: database("charges_test3") }).PASSWORD_SCRYPT_LOG2_N, 12);
  for (const name of ["charges", "charges_bench", "charges_test_gateway", "shop"])
    assert.throws(
      () => parseEnv({ ...weaker, DATABASE_URL: database(name) }),
      /PASSWORD_SCRYPT_LOG2_N: must be at least 17/,
      name,
    );
  assert.equal(
    parseEnv({ DATABASE_URL: database("charges"), PASSWORD_SCRYPT_LOG2_N: "18" }).PASSWORD_SCRYPT_LOG2_N,
    18,
  );
});
