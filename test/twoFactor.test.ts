/**
 * TOTP second factor (otplib): enrolled from the dashboard (after the password),
 * then asked for at every sign-in; a code works once; secrets are sealed at
 * rest; engineers need it with NODE_ENV=production unless switched off (an app
 * instance of its own here).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generate, generateSecret } from "otplib";
import { openTotpSecret } from "~/server/auth/totpSecretBox";
import { closeConnections, db, startAppInstance } from "./helpers";
import { Browser, createStaffAccount, signedIn } from "./staffHttp";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 4;
const STRICT_URL = `http://127.0.0.1:${PORT}`;
let strictApp: Awaited<ReturnType<typeof startAppInstance>>;

before(async () => {
  assert.equal(process.env.STAFF_REQUIRE_2FA, undefined, "the production instance takes the default");
  strictApp = await startAppInstance(PORT, { NODE_ENV: "production" });
});
after(async () => {
  await strictApp?.stop();
  await closeConnections();
});

describe("two-factor sign-in", () => {
  test("enrol from the dashboard; sign-in then needs the code; a wrong code is refused and audited", async () => {
    const account = await createStaffAccount("support");
    const browser = await signedIn(account);
    const other = await signedIn(account);
    const refused = await browser.mutate("account.startTwoFactor", { password: "not-the-password" });
    assert.equal(refused.status, 400, "enrolment asks for the password");
    const started = await browser.mutate("account.startTwoFactor", { password: account.password });
    assert.equal(started.status, 200);
    const { secret, uri, qrSvg } = started.data;
    assert.match(uri, /^otpauth:\/\/totp\/Charges:/);
    assert.match(qrSvg, /^<svg/);
    assert.equal((await browser.mutate("account.confirmTwoFactor", { code: "000000" })).status, 400);
    assert.equal((await browser.mutate("account.confirmTwoFactor", { code: await generate({ secret }) })).status, 200);
    assert.equal((await browser.query("account.me")).data.totpEnabled, true);
    assert.equal((await other.query("sweep.status")).status, 401, "enrolling ends the user's other sessions");

    const next = new Browser();
    const password = await next.post("/api/auth/login", { email: account.email, password: account.password });
    assert.deepEqual(password.json, { status: "second_factor_required" });
    assert.equal((await next.query("sweep.status")).status, 401, "the password alone opens nothing");
    assert.equal((await next.post("/api/auth/verify", { code: "123456" })).status, 401);
    const failed = await db.auditEvent.findFirstOrThrow({
      where: { action: "login.failed", details: { contains: account.email } },
      orderBy: { id: "desc" },
    });
    assert.equal(JSON.parse(failed.details!).reason, "wrong_code");
  });

  test("the secret is stored sealed: the database alone cannot make codes", async () => {
    const account = await createStaffAccount("support");
    const browser = await signedIn(account);
    const { secret } = (await browser.mutate("account.startTwoFactor", { password: account.password })).data;
    assert.equal((await browser.mutate("account.confirmTwoFactor", { code: await generate({ secret }) })).status, 200);
    const { totpSecret } = await db.staffUser.findUniqueOrThrow({ where: { id: account.id } });
    assert.match(totpSecret!, /^v1\./);
    assert.ok(!totpSecret!.includes(secret), "not the secret itself");
    assert.equal(openTotpSecret(totpSecret!, account.id), secret, "TOTP_ENCRYPTION_KEY opens it");
    assert.throws(() => openTotpSecret(totpSecret!, account.id + 1), "copied to another user's row, it does not");
  });

  test("enrolment asks for the password: wrong ones are audited and throttled", async () => {
    const account = await createStaffAccount("support");
    const browser = await signedIn(account);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await browser.mutate("account.startTwoFactor", { password: `guess-${i}` })).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429]);
    const right = await browser.mutate("account.startTwoFactor", { password: account.password });
    assert.equal(right.status, 429, "even the right one waits");
    const failures = await db.auditEvent.findMany({
      where: { action: "password.check_failed", targetId: String(account.id) },
    });
    assert.equal(failures.length, 7);
    assert.equal(JSON.parse(failures[0]!.details!).purpose, "enrol_two_factor");
    assert.equal(failures[0]!.actorLabel, account.email);
  });

  test("a code opens one session: the same code again is refused", async () => {
    const secret = generateSecret();
    const account = await createStaffAccount("support", { totpSecret: secret });
    const code = await generate({ secret });
    const first = new Browser();
    await first.post("/api/auth/login", { email: account.email, password: account.password });
    assert.equal((await first.post("/api/auth/verify", { code })).status, 200);
    assert.equal((await first.query("sweep.status")).status, 200);
    const second = new Browser();
    await second.post("/api/auth/login", { email: account.email, password: account.password });
    assert.equal((await second.post("/api/auth/verify", { code })).status, 401);
  });

  test("a verify without the password step is refused", async () => {
    assert.equal((await new Browser().post("/api/auth/verify", { code: "123456" })).status, 401);
  });

  test("with NODE_ENV=production an engineer without a second factor may read but not act", async () => {
    const account = await createStaffAccount("engineer");
    const browser = await signedIn(account, { baseUrl: STRICT_URL });
    assert.equal((await browser.query("sweep.status")).status, 200);
    const refused = await browser.mutate("rollout.setMode", { mode: "required", reason: "two-factor test" });
    assert.equal(refused.status, 403);
    assert.match(refused.error!.message, /two-factor/);
    assert.equal((await browser.query("account.me")).data.twoFactorRequired, true);

    const { secret } = (await browser.mutate("account.startTwoFactor", { password: account.password })).data;
    assert.equal((await browser.mutate("account.confirmTwoFactor", { code: await generate({ secret }) })).status, 200);
    assert.equal(
      (await browser.mutate("rollout.setMode", { mode: "required", reason: "two-factor test" })).status,
      200,
      "this session passed the check",
    );
    await browser.mutate("rollout.setMode", { mode: "optional", reason: "two-factor test, back" });

    // A code is accepted once, and enrolling used this step's: forget that rather than wait for the next step.
    await db.staffUser.update({ where: { id: account.id }, data: { totpLastStep: null } });
    const again = await signedIn(account, { baseUrl: STRICT_URL, totpSecret: secret });
    assert.equal((await again.mutate("rollout.setMode", { mode: "required", reason: "two-factor test" })).status, 200);
    await again.mutate("rollout.setMode", { mode: "optional", reason: "two-factor test, back" });
  });
});
