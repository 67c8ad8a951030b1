/**
 * Signing in over HTTP: throttled per account and per client address (429 +
 * Retry-After, held in the database), the same time for unknown and known
 * e-mails, OWASP's scrypt parameters with a rehash of older hashes, every
 * attempt in the audit log with its address and user agent.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import { ACCOUNT_LIMIT, ADDRESS_LIMIT } from "~/server/auth/loginThrottle";
import { hashPassword } from "~/server/auth/password";
import { closeConnections, db } from "./helpers";
import { Browser, createStaffAccount } from "./staffHttp";

after(closeConnections);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(browser: Browser, email: string, password: string) {
  const started = performance.now();
  const res = await browser.post("/api/auth/login", { email, password });
  return { status: res.status, ms: performance.now() - started };
}

describe("staff sign-in", () => {
  test(`after ${ACCOUNT_LIMIT.points} wrong passwords: 429 + Retry-After, even for the right one`, async () => {
    const account = await createStaffAccount("support");
    for (let i = 0; i < ACCOUNT_LIMIT.points; i++) {
      // A new address each time: the account's limit holds whatever address the attacker uses.
      const res = await new Browser().post("/api/auth/login", { email: account.email, password: "wrong" });
      assert.equal(res.status, 401);
      assert.equal(res.json.error.code, "invalid_credentials");
    }
    const locked = await new Browser().signIn(account);
    assert.equal(locked.status, 429);
    assert.equal(locked.json.error.code, "too_many_attempts");
    const retryAfter = Number(locked.headers.get("retry-after"));
    assert.ok(retryAfter > 0 && retryAfter <= ACCOUNT_LIMIT.duration, `Retry-After ${retryAfter}`);
    const blocked = await db.auditEvent.count({ where: { action: "login.blocked", actorLabel: account.email } });
    assert.equal(blocked, 1, "the lock-out is audited once");
  });

  test("a burst of parallel guesses gets no more password checks than the limit", async () => {
    const account = await createStaffAccount("support");
    const guesses = Array.from({ length: 15 }, () =>
      new Browser().post("/api/auth/login", { email: account.email, password: "wrong" }),
    );
    const statuses = (await Promise.all(guesses)).map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 401).length, ACCOUNT_LIMIT.points, statuses.join(" "));
    assert.equal(statuses.filter((s) => s === 429).length, 15 - ACCOUNT_LIMIT.points);
  });

  test("an unknown e-mail is locked out like a known one (no existence oracle)", async () => {
    const email = `nobody-${randomUUID()}@example.com`;
    for (let i = 0; i < ACCOUNT_LIMIT.points; i++)
      assert.equal((await new Browser().post("/api/auth/login", { email, password: "x" })).status, 401);
    assert.equal((await new Browser().post("/api/auth/login", { email, password: "x" })).status, 429);
  });

  test(`one address gets ${ADDRESS_LIMIT.points} failures, over any number of accounts`, async () => {
    const browser = new Browser();
    for (let i = 0; i < ADDRESS_LIMIT.points; i++) {
      const res = await browser.post("/api/auth/login", {
        email: `spray-${i}-${randomUUID()}@example.com`,
        password: "x",
      });
      assert.equal(res.status, 401, `attempt ${i + 1}`);
    }
    const account = await createStaffAccount("support");
    const res = await browser.signIn(account);
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) > 0);
    assert.equal((await new Browser().signIn(account)).status, 200, "another address may still sign in");
  });

  test("unknown and known e-mails take the same time to refuse", async () => {
    const account = await createStaffAccount("support");
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 4; i++) {
      unknown.push((await timed(new Browser(), `ghost-${randomUUID()}@example.com`, "wrong")).ms);
      known.push((await timed(new Browser(), account.email, "wrong")).ms);
    }
    const ratio = median(known) / median(unknown);
    assert.ok(
      ratio > 0.6 && ratio < 1.6,
      `known ${median(known).toFixed(0)} ms vs unknown ${median(unknown).toFixed(0)} ms`,
    );
    assert.ok(median(unknown) > 50, "the unknown e-mail's answer costs a password hash too");
  });

  test("a success clears the account's failures", async () => {
    const account = await createStaffAccount("support");
    for (let i = 0; i < ACCOUNT_LIMIT.points - 1; i++)
      await new Browser().post("/api/auth/login", { email: account.email, password: "x" });
    assert.equal((await new Browser().signIn(account)).status, 200);
    for (let i = 0; i < ACCOUNT_LIMIT.points - 1; i++) {
      assert.equal((await new Browser().post("/api/auth/login", { email: account.email, password: "x" })).status, 401);
    }
  });

  test("a hash made with the old parameters (N=2^15) is replaced by one with N=2^17 at sign-in", async () => {
    const password = `old-${randomUUID()}`;
    const passwordHash = await hashPassword(password, { N: 2 ** 15, r: 8, p: 1 });
    const account = { ...(await createStaffAccount("support", { passwordHash })), password };
    assert.equal((await new Browser().signIn(account)).status, 200);
    const stored = await db.staffUser.findUniqueOrThrow({ where: { id: account.id } });
    assert.match(stored.passwordHash, /^scrypt\$131072\$8\$1\$/);
    assert.equal((await new Browser().signIn(account)).status, 200, "the new hash verifies");
  });

  test("sign-ins and failures are audited with time, address and user agent", async () => {
    const account = await createStaffAccount("support");
    const browser = new Browser(undefined, "198.51.100.7", "audit-test-agent/1.0");
    await browser.post("/api/auth/login", { email: account.email, password: "wrong" });
    await browser.signIn(account);
    await browser.signOut();
    const events = await db.auditEvent.findMany({ where: { actorLabel: account.email }, orderBy: { id: "asc" } });
    assert.deepEqual(
      events.map((e) => e.action),
      ["login.failed", "login.succeeded", "logout"],
    );
    for (const e of events) {
      assert.equal(e.ipAddress, "198.51.100.7");
      assert.equal(e.userAgent, "audit-test-agent/1.0");
    }
    assert.equal(JSON.parse(events[0]!.details!).reason, "wrong_password");
    assert.equal(events[1]!.actorStaffId, account.id);
  });

  test("bad input gets 400 in the API's error format; a cross-site sign-in is refused", async () => {
    const browser = new Browser();
    assert.equal((await browser.post("/api/auth/login", { email: 1 })).json.error.code, "invalid_request");
    const crossSite = await browser.post(
      "/api/auth/login",
      { email: "a@b.c", password: "x" },
      { "Sec-Fetch-Site": "cross-site" },
    );
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.json.error.code, "cross_site_request");
  });
});
