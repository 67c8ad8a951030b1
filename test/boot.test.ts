/**
 * The web server refuses a missing, placeholder, short or low-entropy
 * SESSION_SECRET at boot: `next start` exits before it answers any request.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 5;

/**
 * Starts the production build with these variables (undefined: unset); its exit code and output, and whether
 * the port ever answered. With `until`, the server is stopped once it answered and its output matched.
 */
async function start(vars: Record<string, string | undefined>, until?: RegExp) {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: process.env.TEST_APP_DATABASE_URL };
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const child = spawn("node_modules/.bin/next", ["start", "-p", String(PORT), "-H", "127.0.0.1"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  let answered = false;
  const deadline = Date.now() + 60_000;
  let code: number | null | undefined;
  while (code === undefined && Date.now() < deadline && !(until && answered && until.test(output))) {
    answered ||= await fetch(`http://127.0.0.1:${PORT}/api/health`, { signal: AbortSignal.timeout(500) }).then(
      () => true,
      () => false,
    );
    code = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 100))]);
  }
  if (code === undefined) {
    child.kill("SIGKILL");
    await exited;
  }
  return { code, output, answered };
}

const boot = (secret: string | undefined) => start({ SESSION_SECRET: secret });

describe("SESSION_SECRET at boot", () => {
  for (const [what, secret, message] of [
    ["the old .env.example placeholder", "replace-me-with-openssl-rand-hex-32-output", /placeholder/],
    ["a short secret", "0123456789abcdef", /at least 32 random bytes/],
    ["a low-entropy secret", "ab".repeat(32), /repeated pattern|entropy/],
    ["a guessable secret in base64's alphabet", "ThisIsMyVerySecretSessionKeyForTheChargesApp2026", /made of words/],
    ["a passphrase", "correct horse battery staple, then some more words", /hex or base64/],
    ["no secret", undefined, /is not set/],
  ] as const) {
    test(`${what}: next start exits without serving`, async () => {
      const result = await boot(secret);
      assert.equal(result.code, 1, result.output);
      assert.match(result.output, /Refusing to start: .*SESSION_SECRET/s);
      assert.match(result.output, message);
      assert.equal(result.answered, false, "it never answered a request");
    });
  }

  test(".env.example leaves the secret empty (npm start generates one)", () => {
    assert.match(readFileSync(".env.example", "utf8"), /^SESSION_SECRET=$/m);
  });
});

describe("TOTP_ENCRYPTION_KEY and two-factor sign-in at boot", () => {
  for (const [what, key, message] of [
    ["no key", undefined, /is not set/],
    ["a key that is not 32 bytes of hex", "0123456789abcdef", /64 hex characters/],
  ] as const) {
    test(`${what}: next start exits without serving`, async () => {
      const result = await start({ TOTP_ENCRYPTION_KEY: key });
      assert.equal(result.code, 1, result.output);
      assert.match(result.output, /Refusing to start: TOTP_ENCRYPTION_KEY/);
      assert.match(result.output, message);
      assert.equal(result.answered, false);
    });
  }

  test("NODE_ENV=production: required for engineers unless switched off; the start-up output says so", async () => {
    const byDefault = await start({ NODE_ENV: "production", STAFF_REQUIRE_2FA: undefined }, /Two-factor/);
    assert.match(byDefault.output, /Two-factor sign-in: required for engineers \(STAFF_REQUIRE_2FA=unset\)/);
    const off = await start({ NODE_ENV: "production", STAFF_REQUIRE_2FA: "false" }, /two-factor/);
    assert.match(off.output, /WARNING: two-factor sign-in is NOT required for engineers/);
  });

  test(".env.example names the key without a value", () => {
    assert.match(readFileSync(".env.example", "utf8"), /^TOTP_ENCRYPTION_KEY=$/m);
  });
});
