/**
 * docs/errors.md's table of error codes is the registry's, not a hand-kept copy: it is generated
 * (`npm run docs:errors`), and this fails when the page's block and the registry differ.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { API_ERROR_CODES, API_ERRORS } from "@charges/client/errorRegistry";
import { currentBlock, errorTable, withErrorTable } from "../../scripts/lib/errorTable";

const page = readFileSync(path.resolve(import.meta.dirname, "../../docs/errors.md"), "utf8");

describe("docs/errors.md's error table", () => {
  test("is what the registry generates (run `npm run docs:errors` after changing the registry)", () => {
    const block = currentBlock(page);
    assert.ok(block !== undefined, "docs/errors.md has the errors:begin / errors:end markers");
    assert.equal(block, errorTable(), "docs/errors.md's table differs from the registry: run `npm run docs:errors`");
  });

  test("lists every code with its status and Retry-After from the registry, and no other Retry-After", () => {
    const table = errorTable();
    for (const code of API_ERROR_CODES) {
      const spec = API_ERRORS[code] as { status: number; retryAfterSeconds?: number };
      const row = table.split("\n").find((line) => line.startsWith(`| \`${code}\` |`));
      assert.ok(row, `${code} has a row`);
      assert.ok(row.includes(`| ${spec.status}`), `${code}: ${spec.status}`);
      assert.equal(row.includes("`Retry-After: "), spec.retryAfterSeconds !== undefined, `${code}: Retry-After`);
    }
  });

  test("a registry change shows: a stale block is rewritten, an up-to-date one is left as it is", () => {
    const stale = page.replace("| `not_found` | 404 |", "| `not_found` | 410 |");
    assert.notEqual(currentBlock(stale), errorTable());
    assert.equal(withErrorTable(stale), page);
    assert.equal(withErrorTable(page), page);
  });
});
