/** What the browser tests of issue 30's trust work share: signing in, a charge through the API, a row's numbers. */
import { expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";

export const apiKey = () => process.env.TEST_API_KEY!;

export function charge(request: APIRequestContext, opts: { key?: string; amount?: number; customer?: string } = {}) {
  return request.post("/api/charges", {
    headers: { Authorization: `Bearer ${apiKey()}`, ...(opts.key ? { "Idempotency-Key": opts.key } : {}) },
    data: {
      amount_cents: opts.amount ?? 2500,
      currency: "usd",
      card_token: "tok_visa",
      customer_id: opts.customer ?? "cus_e2e_trust",
    },
  });
}

export async function login(page: Page, who: "support" | "engineer") {
  await page.goto("/admin/login");
  await page.getByLabel("E-mail").fill(process.env[`TEST_${who.toUpperCase()}_EMAIL`]!);
  await page.getByLabel("Password").fill(process.env[`TEST_${who.toUpperCase()}_PASSWORD`]!);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("whoami")).toContainText(who);
}

/**
 * Searches the request log as a support user does, once the page is live: text typed into the search box before
 * React has hydrated it is replaced by the box's state (seen on a loaded machine). The count is the browser's own
 * query, so it shows the page is hydrated.
 */
export async function searchRequestLog(page: Page, q: string) {
  await page.goto("/admin");
  await expect(page.getByTestId("request-count")).toContainText(/matching requests|Too many rows/);
  await page.getByLabel(/Search by an idempotency key/).fill(q);
  await page.getByRole("button", { name: "Search", exact: true }).click();
}

/** The text of each cell of a table row. */
export const cellsOf = (row: Locator) => row.getByRole("cell").allTextContents();

/** "1,234" -> 1234. */
export const count = (text: string | undefined) => Number((text ?? "").replace(/[^\d]/g, ""));
