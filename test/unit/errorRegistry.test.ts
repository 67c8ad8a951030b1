import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { API_ERRORS, API_ERROR_CODES, docPath } from "~/server/http/errorRegistry";

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

  test("the files the SDK shares with the server import nothing, so the SDK stays browser-safe", async () => {
    for (const file of ["src/server/http/errorRegistry.ts", "src/server/http/idempotencyProtocol.ts"]) {
      assert.doesNotMatch(await readFile(file, "utf8"), /^\s*import\s/m, file);
    }
    // Every SDK file but the store that is Node-only by design.
    const sdkFiles = (await readdir("src/client")).filter((f) => f !== "fileOperationStore.ts");
    for (const file of sdkFiles) {
      for (const [, from] of (await readFile(`src/client/${file}`, "utf8")).matchAll(/from "([^"]+)"/g)) {
        assert.ok(
          from!.startsWith("./") || /^\.\.\/server\/http\/(errorRegistry|idempotencyProtocol)$/.test(from!),
          `${file} imports ${from}`,
        );
      }
    }
  });
});
