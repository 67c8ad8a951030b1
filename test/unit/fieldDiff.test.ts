import assert from "node:assert/strict";
import { test } from "node:test";
import { diffFields, parseFields } from "~/server/requests/fieldDiff";

test("a same-client reuse names the top-level fields that differed, as sent", () => {
  const diff = diffFields(
    { amount_cents: 1000, currency: "usd", customer_id: "c1" },
    { amount_cents: 1200, currency: "USD", customer_id: "c1" },
  );
  assert.deepEqual(diff.differences, [
    { field: "amount_cents", stored: 1000, attempted: 1200 },
    { field: "currency", stored: "usd", attempted: "USD" },
  ]);
  assert.equal(diff.cardToken, "not_compared");
});

test("a field sent only once is a difference (absent is not null)", () => {
  const diff = diffFields(
    { amount_cents: 1, currency: "usd" },
    { amount_cents: 1, currency: "usd", customer_id: null },
  );
  assert.deepEqual(diff.differences, [{ field: "customer_id", stored: undefined, attempted: null }]);
});

test("every stored field equal: the card token is what differed (the hash covers the whole body)", () => {
  assert.deepEqual(diffFields({ amount_cents: 1, currency: "usd" }, { currency: "usd", amount_cents: 1 }), {
    differences: [],
    cardToken: "differed",
  });
});

test("stored fields parse only as a JSON object", () => {
  assert.deepEqual(parseFields('{"a":1}'), { a: 1 });
  assert.equal(parseFields("[1]"), null);
  assert.equal(parseFields("not json"), null);
  assert.equal(parseFields(null), null);
});
