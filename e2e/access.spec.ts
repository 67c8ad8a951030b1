import { randomUUID } from "node:crypto";
import { expect, test, type APIRequestContext, type Browser, type Page } from "@playwright/test";
import { generate } from "otplib";
import { screenshot } from "./lib";

async function signIn(page: Page, email: string, password: string) {
  await page.goto("/admin/login");
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function signInAsEngineer(page: Page) {
  await signIn(page, process.env.TEST_ENGINEER_EMAIL!, process.env.TEST_ENGINEER_PASSWORD!);
  await expect(page.getByTestId("whoami")).toContainText("engineer");
}

/** 400 if the key is accepted (the body is invalid on purpose: nothing is charged), 401 if not. */
async function keyStatus(request: APIRequestContext, apiKey: string) {
  const res = await request.post("/api/charges", {
    headers: { Authorization: `Bearer ${apiKey}`, "Idempotency-Key": randomUUID() },
    data: { amount_cents: -1 },
  });
  return res.status();
}

/**
 * Opens an engineer's page from the navigation and waits until it is live: its list, which the browser itself
 * queries, is shown. A form filled and sent before React has hydrated the page goes as a plain GET (seen on a
 * loaded machine: the new client's name in the URL and nothing made).
 */
async function openLive(page: Page, name: "API clients" | "Staff") {
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name }).click();
  const list =
    name === "API clients"
      ? page.getByRole("region", { name: /^Client / })
      : page.getByRole("row", { name: process.env.TEST_ENGINEER_EMAIL });
  await expect(list.first()).toBeVisible();
}

/** Reads the one-time secret box, then dismisses it. */
async function takeSecret(page: Page, label: RegExp): Promise<string> {
  const box = page.getByRole("status", { name: label });
  await expect(box).toBeVisible();
  const value = (await box.getByTestId("one-time-secret").textContent())!.trim();
  await box.getByRole("button", { name: "I have copied it" }).click();
  return value;
}

/** Fails the test on any Content-Security-Policy violation the page reports. */
function watchCsp(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (msg) => {
    if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
  });
  return violations;
}

test("an engineer onboards an API client, rotates its key with a grace period and revokes the old key", async ({
  page,
  request,
}) => {
  const violations = watchCsp(page);
  await signInAsEngineer(page);
  await openLive(page, "API clients");
  const name = `Shop ${randomUUID().slice(0, 6)}`;
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Contact e-mail").fill("ops@shop.example");
  await page.getByRole("button", { name: "Create client" }).click();
  const firstKey = await takeSecret(page, new RegExp(`API key of ${name}`));
  expect(firstKey).toMatch(/^sk_test_/);
  const charge = await request.post("/api/charges", {
    headers: { Authorization: `Bearer ${firstKey}`, "Idempotency-Key": randomUUID() },
    data: { amount_cents: 1500, currency: "usd", card_token: "tok_visa" },
  });
  expect(charge.status()).toBe(201);

  const client = page.getByRole("region", { name: `Client ${name}` });
  // Rotation only through its dialog, which states the grace period chosen in it; the new key says it too.
  await client.getByRole("button", { name: `Rotate key of ${name}` }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("Grace period when rotating").selectOption({ label: "none (old keys stop at once)" });
  await expect(dialog).toContainText("stop working at once");
  await dialog.getByLabel("Grace period when rotating").selectOption({ label: "24 hours" });
  await expect(dialog).toContainText("keep working for 24 hours");
  await dialog.getByRole("button", { name: "Rotate the key" }).click();
  await expect(page.getByRole("status", { name: new RegExp(`New API key of ${name}`) })).toContainText(
    "keep working for 24 hours (grace period)",
  );
  await expect(
    page.getByRole("status", { name: new RegExp(`New API key of ${name}`) }).getByRole("button", { name: "Copy" }),
  ).toBeVisible();
  const secondKey = await takeSecret(page, new RegExp(`New API key of ${name}`));
  expect(await keyStatus(request, firstKey)).toBe(400);
  expect(await keyStatus(request, secondKey)).toBe(400);
  const oldRow = client.getByRole("row", { name: new RegExp(firstKey.slice(0, 12)) });
  await expect(oldRow).toContainText("grace");
  const graceEnd = new Date(Date.now() + 24 * 3_600_000).toISOString().slice(0, 13); // the hour it ends
  await expect(oldRow).toContainText(graceEnd.replace("T", " "));
  await screenshot(page, "api-clients-rotation");

  await oldRow.getByRole("button", { name: `Revoke key ${firstKey.slice(0, 12)}` }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
  await expect(oldRow).toContainText("revoked");
  expect(await keyStatus(request, firstKey)).toBe(401);
  expect(await keyStatus(request, secondKey)).toBe(400);

  await page.getByRole("link", { name: "Audit log" }).click();
  await page.getByLabel("Action").selectOption("api_key.revoked");
  await expect(page.getByRole("table", { name: "Audit entries" })).toContainText(firstKey.slice(0, 12));
  await screenshot(page, "audit-log");
  expect(violations).toEqual([]);
});

async function newContext(browser: Browser) {
  const context = await browser.newContext();
  return { context, page: await context.newPage() };
}

test("disabling a staff member ends their live session", async ({ page, browser }) => {
  await signInAsEngineer(page);
  await openLive(page, "Staff");
  const email = `temp-${randomUUID().slice(0, 8)}@example.com`;
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Name").fill("Temp Support");
  await page.getByLabel("Role", { exact: true }).selectOption("support");
  await page.getByRole("button", { name: "Add staff member" }).click();
  const password = await takeSecret(page, new RegExp(`First password of ${email}`));

  const other = await newContext(browser);
  await signIn(other.page, email, password);
  await expect(other.page.getByTestId("whoami")).toContainText("Temp Support");
  await page.reload();
  const sessions = page.getByRole("row", { name: email }).getByRole("cell", { name: "1", exact: true });
  await expect(sessions).toBeVisible(); // one active session

  await page.getByRole("button", { name: `Disable ${email}` }).click();
  await expect(page.getByRole("dialog")).toContainText("1 active session");
  await page.getByRole("dialog").getByRole("button", { name: "Disable" }).click();
  await expect(page.getByRole("row", { name: email })).toContainText("disabled");
  await screenshot(page, "staff-disabled");

  await other.page.getByRole("link", { name: "Rollout" }).click();
  await expect(other.page).toHaveURL(/\/admin\/login$/);
  await signIn(other.page, email, password);
  await expect(other.page.getByRole("form", { name: "Sign in" }).getByRole("alert")).toHaveText(
    "Wrong e-mail or password.",
  );
  await other.context.close();
});

test("a staff member enrols two-factor sign-in and then signs in with a code", async ({ page, browser }) => {
  const violations = watchCsp(page);
  await signInAsEngineer(page);
  await openLive(page, "Staff");
  const email = `totp-${randomUUID().slice(0, 8)}@example.com`;
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Name").fill("Totp Support");
  await page.getByRole("button", { name: "Add staff member" }).click();
  const password = await takeSecret(page, new RegExp(`First password of ${email}`));

  const user = await newContext(browser);
  await signIn(user.page, email, password);
  await user.page.getByRole("link", { name: "Account" }).click();
  await user.page.getByLabel("Your password").fill(password);
  await user.page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
  await expect(user.page.getByRole("img", { name: "QR code of the TOTP secret" })).toBeVisible();
  const secret = (await user.page.getByTestId("totp-secret").textContent())!.trim();
  await user.page.getByLabel("Code from the app").fill(await generate({ secret }));
  await user.page.getByRole("button", { name: "Turn on two-factor sign-in" }).click();
  await expect(user.page.getByRole("region", { name: "Two-factor sign-in" })).toContainText("On:");
  await screenshot(user.page, "two-factor-on");
  await user.page.getByRole("button", { name: "Sign out" }).click();
  await expect(user.page).toHaveURL(/\/admin\/login$/);

  await signIn(user.page, email, password);
  await user.page.getByLabel("Authentication code").fill("000000");
  await user.page.getByRole("button", { name: "Verify" }).click();
  await expect(user.page.getByRole("form", { name: "Sign in" }).getByRole("alert")).toHaveText(
    "Wrong authentication code.",
  );
  // The enrolment used this 30 s step's code, and a code is accepted once: use the next step's, which the server
  // accepts already (a step either side, for clock drift: src/server/auth/totp.ts), instead of waiting for it.
  const nextStep = Math.floor(Date.now() / 1000) + 30;
  await user.page.getByLabel("Authentication code").fill(await generate({ secret, epoch: nextStep }));
  await user.page.getByRole("button", { name: "Verify" }).click();
  await expect(user.page.getByTestId("whoami")).toContainText("Totp Support");
  await user.context.close();
  expect(violations).toEqual([]);
});
