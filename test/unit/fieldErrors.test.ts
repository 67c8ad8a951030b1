import assert from "node:assert/strict";
import { test } from "node:test";
import { createChargeSchema } from "~/server/charges/schema";
import { fieldErrors } from "~/server/operations/fieldErrors";

const errorsOf = (body: unknown) => {
  const parsed = createChargeSchema.safeParse(body);
  assert.equal(parsed.success, false);
  return parsed.success ? {} : fieldErrors(parsed.error);
};

test("each invalid or unknown field is named with its message", () => {
  const fields = errorsOf({ amount_cents: 1.5, currency: "dollars", card_token: "visa", extra: 1, other: 2 });
  assert.deepEqual(Object.keys(fields).sort(), ["amount_cents", "card_token", "currency", "extra", "other"]);
  assert.deepEqual(fields.extra, ["is not a known field"]);
  assert.deepEqual(errorsOf("a string"), { body: ["Invalid input: expected object, received string"] });
});

test("fields named like Object.prototype members are plain own fields", () => {
  for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
    const body = JSON.parse(`{"amount_cents":1,"currency":"usd","card_token":"tok_visa","${name}":1}`);
    const fields = errorsOf(body);
    assert.ok(Object.hasOwn(fields, name), name);
    assert.deepEqual(fields[name], ["is not a known field"]);
    assert.equal(JSON.parse(JSON.stringify(fields))[name][0], "is not a known field", `${name} survives JSON`);
  }
});
