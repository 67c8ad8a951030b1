import { expect, type Page, test } from "@playwright/test";
import { API_ERROR_CODES, API_ERRORS } from "../packages/client/src/errorRegistry";
import { TEST_CARDS } from "../src/gateway-sim/testCards";
import { screenshot } from "./lib";

const apiKey = process.env.TEST_API_KEY!;
const documented = API_ERROR_CODES.filter((code) => code !== "client_closed_request");

/**
 * Redoc renders the whole document in the browser: 1-2 s of CPU, which a CI machine running six stacks on two cores
 * stretched past the 15 s an assertion waits. Its first heading's wait is a hang guard, not a speed verdict.
 */
async function openDocs(page: Page, url: string) {
  await page.goto(url);
  await expect(page.getByRole("heading", { name: "Create a charge" })).toBeAttached({ timeout: 90_000 });
}

test("/docs renders the API reference with every error code and what to do, loading nothing from elsewhere", async ({
  page,
  baseURL,
}) => {
  const foreign: string[] = [];
  page.on("requestfailed", (r) => {
    // Blocked by the page's own CSP: never sent.
    if (new URL(r.url()).origin !== new URL(baseURL!).origin && r.failure()?.errorText !== "csp") foreign.push(r.url());
  });
  page.on("requestfinished", (r) => {
    if (new URL(r.url()).origin !== new URL(baseURL!).origin) foreign.push(r.url());
  });
  // Redoc's styles run under the page CSP: its <style> elements carry the nonce, its attributes are allowed here.
  const refusedStyles: string[] = [];
  page.on("console", (msg) => {
    if (/Content Security Policy/i.test(msg.text()) && /style/i.test(msg.text())) refusedStyles.push(msg.text());
  });

  await openDocs(page, "/docs");
  for (const [noun, create] of [
    ["charge", "Create a charge"],
    ["refund", "Refund a charge"],
  ]) {
    await expect(page.getByRole("heading", { name: create })).toBeVisible();
    await expect(page.getByRole("heading", { name: `Settle a ${noun} by its Idempotency-Key` })).toBeVisible();
    await expect(page.getByRole("heading", { name: `Retrieve one of your ${noun}s` })).toBeVisible();
  }
  // The test cards and what each does; a curl and an SDK sample beside each operation, with real values.
  await expect(page.getByRole("heading", { name: /Test cards$/, level: 2 })).toBeVisible();
  for (const card of TEST_CARDS.filter((c) => c.token.startsWith("tok_")))
    await expect(page.getByRole("cell", { name: card.token, exact: true }), card.token).toHaveCount(1);
  const createCharge = page.locator('[data-section-id="operation/createCharge"]');
  await expect(createCharge.getByText(/"card_token": "tok_visa"/).first()).toBeVisible();
  await createCharge.getByRole("tab", { name: "curl" }).click();
  await expect(createCharge.getByText(/Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324/)).toBeVisible();
  await createCharge.getByRole("tab", { name: "@charges/client" }).click();
  await expect(createCharge.getByText(/client\.charges\.create\(/)).toBeVisible();
  for (const code of documented) {
    const entry = page.locator(`[id="section/Errors/${code}"]`);
    await expect(entry, code).toHaveCount(1);
    await expect(entry.locator("xpath=..")).toContainText(API_ERRORS[code].advice.slice(0, 40).replace(/`/g, ""));
  }
  await screenshot(page, "docs");
  await page.waitForLoadState("networkidle");
  expect(foreign, "requests to other origins").toEqual([]);
  expect(refusedStyles, "styles the CSP refused").toEqual([]);
});

test("an error's doc_url opens its entry on /docs", async ({ page, request }) => {
  const answer = await request.post("/api/charges", {
    headers: { Authorization: `Bearer ${apiKey}`, "Idempotency-Key": "k".repeat(65) },
    data: { amount_cents: 100, currency: "usd", card_token: "tok_visa" },
  });
  expect(answer.status()).toBe(400);
  const { error } = await answer.json();
  expect(error.code).toBe("invalid_idempotency_key");
  expect(answer.headers().link).toContain(error.doc_url);

  await openDocs(page, error.doc_url);
  const heading = page.getByRole("heading", { name: /invalid_idempotency_key$/, level: 2 });
  await expect(heading).toBeInViewport();
  await expect(page.locator(`[id="section/Errors/invalid_idempotency_key"]`)).toHaveCount(1);
  await screenshot(page, "docs-error-entry");
});
