/**
 * Staff password hashes are as strong as OWASP asks against every database but the tests': PASSWORD_SCRYPT_LOG2_N is
 * 17 by default and refused below it except for tests: NODE_ENV=test or a charges_test database (the test stacks
 * use 12 to save minutes of CPU).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv } from "~/env";

const database = (name: string) => `mysql://root@127.0.0.1:3306/${name}`;

test("scrypt's N is 2^17 by default, in production as anywhere", () => {
  assert.equal(parseEnv({ DATABASE_URL: database("charges"), NODE_ENV: "production" }).PASSWORD_SCRYPT_LOG2_N, 17);
  assert.equal(parseEnv({ DATABASE_URL: database("charges_test3") }).PASSWORD_SCRYPT_LOG2_N, 17);
});

test("below 2^17 only with NODE_ENV=test or against a test database", () => {
  const weaker = { PASSWORD_SCRYPT_LOG2_N: "12" };
  const production = { ...weaker, NODE_ENV: "production" };
  assert.equal(parseEnv({ ...production, DATABASE_URL: database("charges_test3") }).PASSWORD_SCRYPT_LOG2_N, 12);
  assert.equal(parseEnv({ ...weaker, NODE_ENV: "test", DATABASE_URL: database("restart") }).PASSWORD_SCRYPT_LOG2_N, 12);
  for (const [NODE_ENV, name] of [
    ["production", "charges"],
    ["production", "charges_bench"],
    ["production", "charges_test_gateway"],
    ["development", "shop"],
  ])
    assert.throws(
      () => parseEnv({ ...weaker, NODE_ENV, DATABASE_URL: database(name!) }),
      /PASSWORD_SCRYPT_LOG2_N: must be at least 17/,
      `${NODE_ENV} ${name}`,
    );
  assert.equal(
    parseEnv({ DATABASE_URL: database("charges"), PASSWORD_SCRYPT_LOG2_N: "18" }).PASSWORD_SCRYPT_LOG2_N,
    18,
  );
});
