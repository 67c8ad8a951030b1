import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { serializeKey } from "@charges/client/idempotencyProtocol";
import { parseIdempotencyKeyHeader } from "~/server/http/idempotencyKeyHeader";

const key = (value: string | null) => {
  const parsed = parseIdempotencyKeyHeader(value);
  return parsed.kind === "valid" ? parsed.key : parsed.kind;
};

describe("Idempotency-Key header", () => {
  test("absent", () => assert.equal(key(null), "absent"));

  test("the draft's structured-field string and the bare form are the same key", () => {
    const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
    assert.equal(key(`"${uuid}"`), uuid);
    assert.equal(key(uuid), uuid);
    assert.equal(key("order-1001"), "order-1001");
  });

  test("escapes in a structured-field string are decoded", () => {
    assert.equal(key(String.raw`"a\"b"`), 'a"b');
    assert.equal(key(String.raw`"back\\slash"`), "back\\slash");
  });

  test("parameters of the item are ignored", () => assert.equal(key('"k1";v=1'), "k1"));

  test("what the SDK sends parses back to the same key, for every printable ASCII character", () => {
    const all = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join("");
    for (let i = 0; i < all.length; i += 32) {
      const k = all.slice(i, i + 32);
      assert.equal(key(serializeKey(k)), k);
    }
  });

  for (const [label, value] of [
    ["two bare field lines (as Node joins them)", "k1, k2"],
    ["two structured field lines", '"k1", "k2"'],
    ["a structured list", '"k1","k2"'],
    ["a bare and a structured line", 'k1, "k2"'],
    ["an unbalanced quote", '"k1'],
    ["an invalid escape", String.raw`"k\n1"`],
    ["a token, not a string, after a quote", '"k1" k2'],
    ["an integer item", '"k1";x=1, 5'],
    ["empty string", '""'],
    ["empty bare value", ""],
    ["65 characters", "k".repeat(65)],
    ["65 characters quoted", `"${"k".repeat(65)}"`],
    ["non-ASCII", "clé-1"],
    ["a control character", "k\u00011"],
  ] as const) {
    test(`${label} is invalid, never a key`, () => {
      const parsed = parseIdempotencyKeyHeader(value);
      assert.equal(parsed.kind, "invalid", JSON.stringify(parsed));
    });
  }

  test("the refusal of joined field lines says what to do", () => {
    const parsed = parseIdempotencyKeyHeader("k1, k2");
    assert.ok(parsed.kind === "invalid" && /exactly one Idempotency-Key/.test(parsed.reason), JSON.stringify(parsed));
  });

  test("64 characters is the limit", () => assert.equal(key("k".repeat(64)), "k".repeat(64)));
});
