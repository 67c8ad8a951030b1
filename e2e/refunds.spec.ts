/**
 * Support gives a double charge back, in Chromium: the refund dialog says what it will do, asks why, and a
 * double click, a second tab showing the same charge and a retry all end in one refund at the gateway.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import * as mariadb from "mariadb";
import { keylessRetry, login, madeCharge, searchRequestLog } from "./lib";

const apiKey = process.env.TEST_API_KEY!;
const auth = { Authorization: `Bearer ${apiKey}` };

/** The refunds the simulated gateway made of a gateway charge: the money that really went back. */
async function gatewayRefunds(gatewayChargeId: string): Promise<number> {
  const conn = await mariadb.createConnection(process.env.TEST_GATEWAY_DATABASE_URL!.replace(/^mysql:/, "mariadb:"));
  try {
    const rows = (await conn.query("SELECT id FROM sim_refunds WHERE charge_ref = ?", [gatewayChargeId])) as unknown[];
    return rows.length;
  } finally {
    await conn.end();
  }
}

test("support refunds a keyless double charge once, despite a double click and a second tab", async ({
  page,
  browser,
  request,
}) => {
  const customer = `cus_double_${randomUUID().slice(0, 8)}`;
  const made = await keylessRetry({ customer, card: "tok_slow_2500", amount: 2500 });
  const second = (await (await request.get(`/api/charges/${made.id}`, { headers: auth })).json()) as {
    id: string;
    gateway_charge_id: string;
  };

  await login(page, "support");
  await page.goto(`/admin/charges/${second.id}`);
  const refunds = page.getByTestId("refunds");
  await expect(refunds).toContainText("No refund yet.");

  // A second tab showing the same charge, as a colleague (or the same person) would have open, its refund dialog
  // open too: both read the charge unrefunded, so both confirms are the same intention.
  const other = await browser.newPage({ storageState: await page.context().storageState() });
  await other.goto(`/admin/charges/${second.id}`);
  // A third tab, loaded now and opened only after the refund: its dialog reads the charge again.
  const late = await browser.newPage({ storageState: await page.context().storageState() });
  await late.goto(`/admin/charges/${second.id}`);
  await expect(late.getByTestId("refund-button")).toBeVisible();
  await other.getByTestId("refund-button").click();
  const otherDialog = other.getByRole("dialog");
  await expect(otherDialog).toContainText("25.00 USD");
  await otherDialog.getByRole("combobox", { name: "Reason" }).selectOption("duplicate");
  await otherDialog.getByLabel(/^Note/).fill("Refunding the double charge");
  await expect(otherDialog.getByRole("button", { name: "Refund 25.00 USD" })).toBeEnabled();

  await refunds.getByTestId("refund-button").click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText(`charge ${second.id}`);
  await expect(dialog).toContainText("25.00 USD");
  await expect(dialog.getByRole("button", { name: /^Refund/ })).toBeDisabled(); // a reason is required
  await dialog.getByRole("combobox", { name: "Reason" }).selectOption("duplicate");
  await expect(dialog.getByRole("button", { name: /^Refund/ })).toBeDisabled(); // and a note
  await dialog.getByLabel(/^Note/).fill("Charged twice: keyless retry 15 s apart");
  await dialog.getByRole("button", { name: "Refund 25.00 USD" }).dblclick();
  await expect(dialog).toBeHidden();
  await expect(refunds.getByTestId("refund-list").locator(":scope > li")).toHaveCount(1);
  await expect(refunds).toContainText("refunded");

  // The other tab confirms what it read: the same operation, made already.
  await otherDialog.getByRole("button", { name: "Refund 25.00 USD" }).click();
  await expect(otherDialog).toBeHidden();
  // It was done already: said so, and the second note is kept with the refund.
  await expect(other.getByTestId("refund-outcome")).toContainText("Already done");
  await expect(other.getByTestId("refund-list").locator(":scope > li")).toHaveCount(1);
  await expect(other.getByTestId("refund-notes")).toContainText("Refunding the double charge");

  // The late tab's page still says unrefunded; its dialog says what is true, and offers nothing to confirm.
  await late.getByTestId("refund-button").click();
  const lateDialog = late.getByRole("dialog");
  await expect(lateDialog).toContainText("25.00 USD was refunded already.");
  await lateDialog.getByRole("combobox", { name: "Reason" }).selectOption("duplicate");
  await lateDialog.getByLabel(/^Note/).fill("Refunding it again?");
  await expect(lateDialog.getByRole("button", { name: /^Refund/ })).toBeDisabled();
  await late.close();

  const shown = await (await request.get(`/api/charges/${second.id}`, { headers: auth })).json();
  expect(shown.amount_refunded_cents).toBe(2500);
  expect(shown.refunds).toHaveLength(1);
  expect(await gatewayRefunds(second.gateway_charge_id)).toBe(1);
  await other.close();
});

test("a partial refund, then the rest; the dialog refuses more than is left", async ({ page, request }) => {
  const customer = `cus_partial_${randomUUID().slice(0, 8)}`;
  const charged = await madeCharge(request, { customer }); // keyless, as a client without keys retries a purchase
  await login(page, "support");
  await page.goto(`/admin/charges/${charged.id}`);
  const refunds = page.getByTestId("refunds");

  await refunds.getByTestId("refund-button").click();
  let dialog = page.getByRole("dialog");
  await dialog.getByLabel(/^Amount/).fill("30");
  await dialog.getByRole("combobox", { name: "Reason" }).selectOption("requested_by_customer");
  await dialog.getByLabel(/^Note/).fill("Customer asked for part back");
  await dialog.getByRole("button", { name: /^Refund/ }).click();
  await expect(dialog.getByRole("alert")).toContainText("between 0.01 USD and 25.00 USD");
  await dialog.getByLabel(/^Amount/).fill("10");
  await dialog.getByRole("button", { name: "Refund 10.00 USD" }).click();
  await expect(dialog).toBeHidden();
  await expect(refunds).toContainText("partly refunded: 10.00 USD");

  await refunds.getByTestId("refund-button").click();
  dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("10.00 USD was refunded already");
  await dialog.getByRole("combobox", { name: "Reason" }).selectOption("requested_by_customer");
  await dialog.getByLabel(/^Note/).fill("And the rest");
  await dialog.getByRole("button", { name: "Refund 15.00 USD" }).click();
  await expect(dialog).toBeHidden();
  await expect(refunds.getByTestId("refund-list").locator(":scope > li")).toHaveCount(2);
  await expect(refunds).toContainText("Nothing is left to refund.");
  expect(await gatewayRefunds(charged.gateway_charge_id)).toBe(2);
});

test("a pasted refund id opens its charge; a pasted Request-Id opens the request it answered", async ({
  page,
  request,
}) => {
  const customer = `cus_search_${randomUUID().slice(0, 8)}`;
  const charged = await madeCharge(request, { customer }); // keyless, as a client without keys retries a purchase
  const key = `e2e-refund-${randomUUID()}`;
  const refunded = await request.post("/api/refunds", {
    headers: { ...auth, "Idempotency-Key": key },
    data: { charge: charged.id, amount_cents: 500 },
  });
  expect(refunded.status()).toBe(201);
  const refund = (await refunded.json()) as { id: string };
  const requestId = refunded.headers()["request-id"]!;
  await login(page, "support");
  const search = (q: string) => searchRequestLog(page, q);
  await search(refund.id);
  await page.waitForURL(new RegExp(`/admin/charges/${charged.id}$`));
  await expect(page.getByTestId("refund-list")).toContainText(refund.id);
  // The answer's events are written in a batch after it (a second or so; longer on a loaded machine): searched again
  // until they are, within the test's own time.
  await expect(async () => {
    await search(requestId);
    await page.waitForURL(/\/admin\/requests\/\d+$/, { timeout: 5_000 });
  }).toPass({ timeout: 30_000 });
  await expect(page.getByRole("heading", { level: 1 })).toContainText(key);
  await expect(page.getByTestId("linked-refund")).toContainText(refund.id);
  await expect(page.getByTestId("timeline")).toContainText(requestId);
});
