import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { API_ERRORS, API_ERROR_CODES, docPath } from "@charges/client/errorRegistry";

describe("the error registry", () => {
  test("every code has a status, a title, a message, and advice for clients", () => {
    for (const code of API_ERROR_CODES) {
      const spec = API_ERRORS[code];
      assert.ok(spec.status >= 400 && spec.status < 600, code);
      for (const text of [spec.title, spec.message, spec.advice]) assert.ok(text.length > 3, code);
      assert.equal(docPath(code), `/docs#section/Errors/${code}`);
    }
  });

  test("a retryable code says when to retry (409/503) or is a 500 that is safe to resend", () => {
    for (const code of API_ERROR_CODES.filter((c) => API_ERRORS[c].action === "retry")) {
      const spec = API_ERRORS[code] as { status: number; retryAfterSeconds?: number };
      assert.ok(spec.retryAfterSeconds !== undefined || spec.status >= 499, code);
    }
  });

  test("the registry and the key rule, which the server imports from the SDK package, import nothing", async () => {
    for (const file of ["errorRegistry.ts", "idempotencyProtocol.ts"]) {
      assert.doesNotMatch(await readFile(`packages/client/src/${file}`, "utf8"), /^\s*import\s/m, file);
    }
  });
});
