import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { expect, test, type APIRequestContext, type Page } from "@playwright/test";
import { SERVER_CODE_FLAGS } from "../scripts/lib/processes";

const apiKey = process.env.TEST_API_KEY!;
const shot = (page: Page, name: string) => page.screenshot({ path: `e2e/artifacts/${name}.png`, fullPage: true });

function charge(request: APIRequestContext, opts: { key?: string; card?: string; amount?: number }) {
  return request.post("/api/charges", {
    headers: { Authorization: `Bearer ${apiKey}`, ...(opts.key ? { "Idempotency-Key": opts.key } : {}) },
    data: { amount_cents: opts.amount ?? 2500, currency: "usd", card_token: opts.card ?? "tok_visa", customer_id: "cus_e2e" },
  });
}

async function login(page: Page, who: "support" | "engineer") {
  await page.goto("/admin/login");
  await page.getByLabel("E-mail").fill(process.env[`TEST_${who.toUpperCase()}_EMAIL`]!);
  await page.getByLabel("Password").fill(process.env[`TEST_${who.toUpperCase()}_PASSWORD`]!);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("whoami")).toContainText(who);
}

test("anonymous visitors are sent to the login page", async ({ page }) => {
  await page.goto("/admin");
  await expect(page).toHaveURL(/\/admin\/login$/);
  await page.getByLabel("E-mail").fill("support@example.com");
  await page.getByLabel("Password").fill("wrong password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("Wrong e-mail or password.")).toBeVisible();
});

test("support sees keyed, reused, abandoned and in-flight traffic", async ({ page, request }) => {
  const run = randomUUID().slice(0, 8);
  const keyed = `e2e-keyed-${run}`;
  const reused = `e2e-reused-${run}`;
  const abandoned = `e2e-abandoned-${run}`;
  const inFlight = `e2e-inflight-${run}`;

  expect((await charge(request, {})).status()).toBe(201); // keyless
  const created = await charge(request, { key: keyed });
  expect(created.status()).toBe(201);
  expect((await charge(request, { key: reused })).status()).toBe(201);
  expect((await charge(request, { key: reused, amount: 9 })).status()).toBe(422);
  // A gateway error releases the claim; nobody retries, so the sweeper reaps it.
  expect((await charge(request, { key: abandoned, card: "tok_error" })).status()).toBe(503);
  await new Promise((r) => setTimeout(r, 1_200));
  execFileSync("node_modules/.bin/tsx", [...SERVER_CODE_FLAGS, "src/worker/sweeper.ts", "--once"], {
    env: { ...process.env, REAP_AFTER_MS: "1000", GATEWAY_TIMEOUT_MS: "500", LEASE_MARGIN_MS: "200" },
    stdio: "inherit",
  });
  const slow = charge(request, { key: inFlight, card: "tok_slow_4500" });

  await login(page, "support");
  await expect(page.getByTestId("in-flight")).toContainText(inFlight);
  await expect(page.getByTestId("abandoned")).toContainText(abandoned);
  await expect(page.getByTestId("key-reuses")).toContainText(reused);
  await expect(page.getByTestId("sweep-status")).toContainText("Last run");
  await shot(page, "requests");

  await page.getByLabel("Search").fill(keyed);
  await page.getByRole("button", { name: "Find" }).click();
  await page.getByTestId("search-results").getByRole("link", { name: keyed }).click();
  await expect(page.getByTestId("request-detail")).toContainText("Complete");
  await expect(page.getByTestId("stored-response")).toContainText((await created.json()).id);
  await expect(page.getByTestId("linked-charge")).toContainText("25.00 USD");
  await shot(page, "request-detail");

  await page.getByRole("link", { name: "Rollout" }).click();
  await expect(page.getByTestId("keyless-chart")).toBeVisible();
  await expect(page.getByTestId("clients-keyless")).toContainText("Demo client");
  await expect(page.getByTestId("safe-to-enforce")).toContainText("Not yet safe");
  await shot(page, "rollout");

  // Support may look, not switch.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Switch to required" }).click();
  await expect(page.getByText("Only engineers can do this.")).toBeVisible();
  await expect(page.getByTestId("current-mode")).toHaveText("optional");
  expect((await slow).status()).toBe(201);
});

test("an engineer enforces the header; a keyless request then gets 400", async ({ page, request }) => {
  await login(page, "engineer");
  await page.goto("/admin/rollout");
  await expect(page.getByTestId("current-mode")).toHaveText("optional");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Switch to required" }).click();
  await expect(page.getByTestId("current-mode")).toHaveText("required");
  await expect(page.getByTestId("audit-log")).toContainText("optional → required");
  await shot(page, "rollout-required");

  const keyless = await charge(request, {});
  expect(keyless.status()).toBe(400);
  expect((await keyless.json()).error.code).toBe("idempotency_key_required");
  expect((await charge(request, { key: `e2e-enforced-${randomUUID()}` })).status()).toBe(201);

  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Switch to optional" }).click();
  await expect(page.getByTestId("current-mode")).toHaveText("optional");
  expect((await charge(request, {})).status()).toBe(201);
});
