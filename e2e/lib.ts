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

/** The text of each cell of a table row. */
export const cellsOf = (row: Locator) => row.getByRole("cell").allTextContents();

/** "1,234" -> 1234. */
export const count = (text: string | undefined) => Number((text ?? "").replace(/[^\d]/g, ""));
