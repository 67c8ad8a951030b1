/**
 * Dashboard sessions live in the database and are re-read on every request:
 * logout, a role change, disabling or deleting a user and the two timeouts
 * take effect on the next request, over HTTP against the real server.
 */
import assert from "node:assert/strict";
import { sealData } from "iron-session";
import { after, describe, test } from "node:test";
import { closeConnections, db } from "./helpers";
import { Browser, createStaffAccount, signedIn } from "./staffHttp";

after(closeConnections);

const canRead = async (b: Browser) => (await b.query("sweep.status")).status;

describe("staff sessions", () => {
  test("after logout the old cookie no longer works", async () => {
    const browser = await signedIn(await createStaffAccount("support"));
    assert.equal(await canRead(browser), 200);
    const oldCookie = browser.cookie;
    const res = await browser.signOut();
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/admin/login");
    browser.cookie = oldCookie; // as an attacker who kept a copy would
    assert.equal(await canRead(browser), 401);
    const page = await browser.page("/admin");
    assert.equal(page.status, 307, "the dashboard sends it to the login page");
    assert.match(page.headers.get("location") ?? "", /\/admin\/login$/);
  });

  test("the role is re-read on every request: an engineer demoted in the database cannot switch the mode", async () => {
    const account = await createStaffAccount("engineer");
    const browser = await signedIn(account);
    await db.staffUser.update({ where: { id: account.id }, data: { role: "support" } });
    const res = await browser.mutate("rollout.setMode", { mode: "required" });
    assert.equal(res.status, 403);
    assert.equal(res.error?.code, "FORBIDDEN");
    assert.equal((await db.setting.findUnique({ where: { name: "idempotency_mode" } }))?.value, "optional");
  });

  test("a role change by an engineer ends the user's sessions; so does disabling them", async () => {
    const adminAccount = await createStaffAccount("engineer");
    const admin = await signedIn(adminAccount);
    const target = await createStaffAccount("engineer");
    const session = await signedIn(target);
    assert.equal((await admin.mutate("staff.setRole", { userId: target.id, role: "support" })).data.ended, 1);
    assert.equal(await canRead(session), 401);

    const again = await signedIn(target);
    assert.equal(await canRead(again), 200);
    assert.equal((await admin.mutate("staff.setDisabled", { userId: target.id, disabled: true })).status, 200);
    assert.equal(await canRead(again), 401);
    assert.equal((await again.signIn(target)).status, 401, "a disabled user cannot sign in");
    assert.equal(await db.staffSession.count({ where: { staffUserId: target.id } }), 0);

    // Each of those is in the audit log, by whom, from where, with the sessions it ended.
    const events = await db.auditEvent.findMany({
      where: { targetType: "staff_user", targetId: String(target.id) },
      orderBy: { id: "asc" },
    });
    const trail = events.map((e) => `${e.action} ${e.details}`);
    assert.deepEqual(
      events.map((e) => e.action),
      ["staff.role_changed", "session.revoked", "staff.disabled", "session.revoked"],
      trail.join("\n"),
    );
    assert.ok(
      events.every((e) => e.actorType === "staff" && e.actorStaffId === adminAccount.id),
      trail.join("\n"),
    );
    assert.ok(
      events.every((e) => e.ipAddress === admin.address && e.userAgent === admin.userAgent),
      trail.join("\n"),
    );
    assert.deepEqual(JSON.parse(events[0]!.details!), { email: target.email, from: "engineer", to: "support" });
    assert.deepEqual(JSON.parse(events[1]!.details!), { reason: "role_changed", ended: 1 });
    assert.deepEqual(JSON.parse(events[3]!.details!), { reason: "disabled", ended: 1 });
  });

  test("a deleted user's session ends", async () => {
    const account = await createStaffAccount("support");
    const browser = await signedIn(account);
    await db.staffUser.delete({ where: { id: account.id } });
    assert.equal(await canRead(browser), 401);
  });

  test("idle for 30 minutes, or 8 hours after sign-in, the session is over", async () => {
    const idleAccount = await createStaffAccount("support");
    const absoluteAccount = await createStaffAccount("support");
    const idle = await signedIn(idleAccount);
    const absolute = await signedIn(absoluteAccount);
    const row = (userId: number) => db.staffSession.findFirstOrThrow({ where: { staffUserId: userId } });
    const absoluteRow = await row(absoluteAccount.id);
    const lifetime = absoluteRow.expiresAt.getTime() - absoluteRow.createdAt.getTime();
    assert.ok(Math.abs(lifetime - 8 * 3_600_000) < 5_000, "it ends 8 h after sign-in");

    await db.staffSession.update({
      where: { id: (await row(idleAccount.id)).id },
      data: { lastSeenAt: new Date(Date.now() - 31 * 60_000) },
    });
    await db.staffSession.update({ where: { id: absoluteRow.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    assert.equal(await canRead(idle), 401, "idle timeout");
    assert.equal(await canRead(absolute), 401, "absolute timeout");
  });

  test("activity keeps a session alive: last_seen_at moves on", async () => {
    const account = await createStaffAccount("support");
    const browser = await signedIn(account);
    const before = await db.staffSession.findFirstOrThrow({ where: { staffUserId: account.id } });
    await db.staffSession.update({
      where: { id: before.id },
      data: { lastSeenAt: new Date(Date.now() - 20 * 60_000) },
    });
    assert.equal(await canRead(browser), 200);
    const after = await db.staffSession.findFirstOrThrow({ where: { id: before.id } });
    assert.ok(Date.now() - after.lastSeenAt.getTime() < 60_000);
  });

  test("a cookie sealed with another secret (the old .env.example placeholder) is refused", async () => {
    const account = await createStaffAccount("engineer");
    const forged = await sealData(
      { token: "anything", user: { id: account.id, email: account.email, name: "x", role: "engineer" } },
      { password: "replace-me-with-openssl-rand-hex-32-output" },
    );
    const browser = new Browser();
    browser.cookie = `charges_session=${forged}`;
    assert.equal(await canRead(browser), 401);
    assert.equal((await browser.mutate("rollout.setMode", { mode: "required" })).status, 401);
  });

  test("the cookie is HttpOnly and SameSite=Lax, and carries no user data", async () => {
    const browser = new Browser();
    const account = await createStaffAccount("support");
    const res = await fetch(`${browser.baseUrl}/api/auth/login`, {
      method: "POST",
      headers: browser.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ email: account.email, password: account.password }),
    });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("charges_session="))!;
    assert.match(cookie, /HttpOnly/i);
    assert.match(cookie, /SameSite=Lax/i);
    assert.ok(!cookie.includes(account.email) && !cookie.includes("support"));
  });

  test("a stolen session cannot guess the password through changePassword: throttled and audited", async () => {
    const account = await createStaffAccount("support");
    const thief = await signedIn(account);
    const guess = (i: number) =>
      thief.mutate("account.changePassword", { current: `guess-${i}`, next: "x".repeat(16) });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await guess(i)).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429]);
    const right = await thief.mutate("account.changePassword", { current: account.password, next: "y".repeat(16) });
    assert.equal(right.status, 429, "the right password waits too, so a guess cannot be confirmed");
    const failures = await db.auditEvent.findMany({
      where: { action: "password.check_failed", targetId: String(account.id) },
      orderBy: { id: "asc" },
    });
    assert.equal(failures.length, 7);
    assert.deepEqual(JSON.parse(failures[0]!.details!), { purpose: "change_password" });
    assert.deepEqual(JSON.parse(failures[5]!.details!), { purpose: "change_password", throttled: true });
    assert.equal(failures[0]!.ipAddress, thief.address);
  });
});
