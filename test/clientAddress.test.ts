/**
 * The client address that sign-in throttling and the audit log use, through
 * the real server: with no trusted proxy (TRUSTED_PROXY_HOPS=0) the TCP peer's,
 * whatever X-Forwarded-For the client writes; with N trusted proxies, the Nth
 * entry from the right. (The suite's own app trusts one hop: the tests play
 * that proxy, to give each browser an address of its own.)
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { PAIR_LIMIT } from "~/server/auth/loginThrottle";
import { closeConnections, db, startAppInstance } from "./helpers";
import { Browser, createStaffAccount } from "./staffHttp";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100);
const NO_PROXY_URL = `http://127.0.0.1:${PORT + 6}`;
const TWO_PROXIES_URL = `http://127.0.0.1:${PORT + 7}`;
let apps: Awaited<ReturnType<typeof startAppInstance>>[] = [];

before(async () => {
  apps = await Promise.all([
    startAppInstance(PORT + 6, { TRUSTED_PROXY_HOPS: "0" }),
    startAppInstance(PORT + 7, { TRUSTED_PROXY_HOPS: "2" }),
  ]);
});
after(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  // This file's failures came from 127.0.0.1, the address the browser tests sign in from.
  await db.rateLimit.deleteMany({ where: { key: "login_address:127.0.0.1" } });
  await closeConnections();
});

/** A failed sign-in with these X-Forwarded-For entries; the address its audit entry names. */
async function auditedAddress(baseUrl: string, forwardedFor: string) {
  const email = `address-${randomUUID()}@example.com`;
  const res = await new Browser(baseUrl, forwardedFor).post("/api/auth/login", { email, password: "wrong" });
  assert.equal(res.status, 401);
  const entry = await db.auditEvent.findFirstOrThrow({
    where: { action: "login.failed", details: { contains: email } },
  });
  return entry.ipAddress;
}

describe("X-Forwarded-Proto", () => {
  test("switches on HSTS only when a proxy is trusted: without one, any client could send it", async () => {
    const sent = { headers: { "X-Forwarded-Proto": "https" } };
    const untrusted = await fetch(`${NO_PROXY_URL}/admin/login`, sent);
    assert.equal(untrusted.status, 200);
    assert.equal(untrusted.headers.get("strict-transport-security"), null);
    assert.doesNotMatch(untrusted.headers.get("content-security-policy") ?? "", /upgrade-insecure-requests/);
    const trusted = await fetch(`${TWO_PROXIES_URL}/admin/login`, sent);
    assert.match(trusted.headers.get("strict-transport-security") ?? "", /^max-age=/);
  });
});

describe("client address", () => {
  test("no trusted proxy: the TCP peer's, whatever X-Forwarded-For says", async () => {
    assert.equal(await auditedAddress(NO_PROXY_URL, "203.0.113.50"), "127.0.0.1");
    assert.equal(await auditedAddress(NO_PROXY_URL, "203.0.113.51, 198.51.100.2"), "127.0.0.1");
  });

  test("no trusted proxy: spoofed addresses share the peer's throttling bucket", async () => {
    const account = await createStaffAccount("support");
    for (let i = 0; i < PAIR_LIMIT.points; i++) {
      const res = await new Browser(NO_PROXY_URL, `203.0.113.${i + 1}`).post("/api/auth/login", {
        email: account.email,
        password: "wrong",
      });
      assert.equal(res.status, 401);
    }
    const spoofed = await new Browser(NO_PROXY_URL, "203.0.113.99").signIn(account);
    assert.equal(spoofed.status, 429, "a new X-Forwarded-For does not make a new client");
  });

  test("two trusted proxies: the second entry from the right", async () => {
    assert.equal(await auditedAddress(TWO_PROXIES_URL, "203.0.113.7, 198.51.100.23, 192.0.2.1"), "198.51.100.23");
    assert.equal(await auditedAddress(TWO_PROXIES_URL, "198.51.100.24, 192.0.2.1"), "198.51.100.24");
  });
});
