/**
 * TOTP second factor (otplib): enrolled from the dashboard, then asked for at
 * every sign-in; a code works once; engineers need it when STAFF_REQUIRE_2FA=true
 * (an app instance of its own here).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generate, generateSecret } from "otplib";
import { closeConnections, db, startAppInstance } from "./helpers";
import { Browser, createStaffAccount, signedIn } from "./staffHttp";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 4;
const STRICT_URL = `http://127.0.0.1:${PORT}`;
let strictApp: Awaited<ReturnType<typeof startAppInstance>>;

before(async () => {
  strictApp = await startAppInstance(PORT, { STAFF_REQUIRE_2FA: "true" });
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
    const started = await browser.mutate("account.startTwoFactor");
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
      where: { action: "login.failed", actorLabel: account.email },
      orderBy: { id: "desc" },
    });
    assert.equal(JSON.parse(failed.details!).reason, "wrong_code");
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

  test("with STAFF_REQUIRE_2FA=true an engineer without a second factor may read but not act", async () => {
    const account = await createStaffAccount("engineer");
    const browser = await signedIn(account, { baseUrl: STRICT_URL });
    assert.equal((await browser.query("sweep.status")).status, 200);
    const refused = await browser.mutate("rollout.setMode", { mode: "required", reason: "two-factor test" });
    assert.equal(refused.status, 403);
    assert.match(refused.error!.message, /two-factor/);
    assert.equal((await browser.query("account.me")).data.twoFactorRequired, true);

    const { secret } = (await browser.mutate("account.startTwoFactor")).data;
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
