/**
 * The small rules of issue 43, without a server: which SESSION_SECRETs pass, how deep JSON may nest, when
 * X-Forwarded-Proto counts, what a logged stack frame keeps, which paths are malformed and
 * which keys are the dashboard's. Each is tested through the real server too (test/httpEdges.test.ts, boot,
 * clientAddress, logging, staffRefundControls).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { sessionSecretProblem } from "~/lib/sessionSecret";
import { parseIdempotencyKeyHeader } from "~/server/http/idempotencyKeyHeader";
import { isDecodablePath } from "~/server/http/peerAddress";
import { jsonDepthProblem } from "~/server/http/readJsonBody";
import { cameOverHttps } from "~/server/http/transport";
import { withoutLocation } from "~/server/observability/log";

test("SESSION_SECRET: random bytes as hex or base64 pass; what people type does not", () => {
  for (let i = 0; i < 200; i++) {
    assert.equal(sessionSecretProblem(randomBytes(32).toString("hex")), null);
  }
  for (const guess of [
    "ThisIsMyVerySecretSessionKeyForTheChargesApp2026",
    "correct-horse-battery-staple-correct-horse-battery",
    "a".repeat(64),
    "0123456789abcdef".repeat(4),
    "change-me-change-me-change-me-change-me-change-me",
    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
    randomBytes(16).toString("hex"),
    "correct horse battery staple, then some more words",
  ]) {
    assert.notEqual(sessionSecretProblem(guess), null, guess);
  }
});

test("JSON depth: counted outside strings; deeper than the bound is named", () => {
  assert.equal(jsonDepthProblem(`{"a":[{"b":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]}`), null);
  assert.equal(jsonDepthProblem(`${"[".repeat(32)}${"]".repeat(32)}`), null);
  assert.match(jsonDepthProblem(`${"[".repeat(33)}${"]".repeat(33)}`) ?? "", /more than 32 levels/);
  assert.match(jsonDepthProblem(`${"[".repeat(30_000)}`) ?? "", /more than 32/);
  assert.equal(jsonDepthProblem(`{"s":"\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`), null);
});

test("X-Forwarded-Proto: ignored without a trusted proxy; read as the trusted proxy wrote it", () => {
  const headers = (proto: string) => new Headers({ "x-forwarded-proto": proto });
  assert.equal(cameOverHttps(headers("https"), 0), false);
  assert.equal(cameOverHttps(headers("https"), 1), true);
  assert.equal(cameOverHttps(headers("http"), 1), false);
  assert.equal(cameOverHttps(headers("https, http"), 1), false, "the client's own entry is not the proxy's");
  assert.equal(cameOverHttps(headers("https, http"), 2), true, "the outer proxy saw https, the inner http");
});

test("a logged stack frame keeps the function, never the file", () => {
  assert.equal(withoutLocation("    at handle (/srv/app/.next/server/chunks/123.js:1:2)"), "at handle");
  assert.equal(withoutLocation("    at async run (file:///srv/app/x.mjs:3:4)"), "at run");
  assert.equal(withoutLocation("    at /srv/app/x.js:3:4"), "at <anonymous>");
  assert.equal(withoutLocation("    at async Promise.all (index 0)"), "at Promise.all");
});

test("paths: malformed percent-encoding is found, in any segment, never in the query", () => {
  assert.equal(isDecodablePath("/api/refunds/%ZZ"), false);
  assert.equal(isDecodablePath("/admin/charges/%e9"), false);
  assert.equal(isDecodablePath("/api/charges/ch_1%20"), true);
  assert.equal(isDecodablePath("/api/charges?q=%ZZ"), true);
  assert.equal(isDecodablePath("/admin"), true);
});

test("the dashboard's key space: refused from the API, accepted from the dashboard", () => {
  const key = "dashboard:0123456789abcdef";
  assert.equal(parseIdempotencyKeyHeader(key).kind, "invalid");
  assert.equal(parseIdempotencyKeyHeader(`"${key}"`).kind, "invalid");
  assert.deepEqual(parseIdempotencyKeyHeader(key, { dashboard: true }), { kind: "valid", key });
  assert.equal(parseIdempotencyKeyHeader("Dashboard:x").kind, "valid", "byte for byte: only the exact prefix");
});
