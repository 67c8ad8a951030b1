import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalJson, requestHash } from "~/server/idempotency/canonicalHash";

test("canonical JSON sorts keys at every depth and drops formatting", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  );
  assert.equal(requestHash(JSON.parse('{ "x": 1,\n "y": "2" }')), requestHash({ y: "2", x: 1 }));
});

test("any change of value changes the hash; so does a type change", () => {
  const base = requestHash({ amount_cents: 1999, currency: "usd" });
  assert.notEqual(requestHash({ amount_cents: 2000, currency: "usd" }), base);
  assert.notEqual(requestHash({ amount_cents: "1999", currency: "usd" }), base);
  assert.notEqual(requestHash({ amount_cents: 1999, currency: "usd", customer_id: null }), base);
  assert.match(base, /^[0-9a-f]{64}$/);
});

test("keys named like Object.prototype members hash as plain keys", () => {
  const withProto = JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}') as object;
  assert.equal(canonicalJson(withProto), '{"__proto__":{"x":1},"constructor":2}');
});
