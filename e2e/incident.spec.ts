/**
 * Issue 30, part A, as support and engineers do it in Chromium: the keyless
 * double charge found among legitimate same-amount purchases (which stay
 * unhighlighted) and listed by the incident view with its gap and a CSV; a
 * customer's charges between two local times; a pasted key that opens its
 * record and a search that filters the list; a mismatch warned of on its
 * records, closed with a note and found in the audit log; lists as cards on a
 * 390 px phone. The browser runs in Auckland's time zone, so a range read as
 * UTC would miss by 13 hours.
 */
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { appConnection, appQuery, keylessRetry, login, madeCharge, searchRequestLog, sweepOnce } from "./lib";

test.use({ timezoneId: "Pacific/Auckland" });

const run = randomUUID().slice(0, 8);

/** A datetime-local value (local, to the second) `seconds` after one the page showed ("yyyy-MM-dd HH:mm:ss"). */
const shifted = (shown: string, seconds: number) =>
  new Date(new Date(`${shown.replace(" ", "T")}Z`).getTime() + seconds * 1000).toISOString().slice(0, 19);

test("support finds the keyless double charge among same-amount purchases, and the incident view lists it", async ({
  page,
  request,
}) => {
  const customer = `cus_inc_${run}`;
  const from = new Date(Date.now() - 60_000);
  // The incident: a keyless retry of the same request after a timeout. Beside it, two real purchases of the same
  // amount.
  const retry = await keylessRetry({ customer, card: "tok_slow_2500", amount: 3100 });
  const [first] = await appQuery<{ id: string }>("SELECT id FROM charges WHERE customer_id = ? AND id <> ?", [
    customer,
    retry.id,
  ]);
  const otherCard = await madeCharge(request, { amount: 3100, customer, card: "tok_mastercard" });
  await madeCharge(request, { amount: 3100, customer, card: "tok_amex", key: randomUUID() });
  const madeAt = Date.now();

  await login(page, "support");
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Customers" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Customers");
  await page.getByLabel(/Customer id/).fill(customer);
  await page.getByRole("button", { name: "Show charges" }).click();
  const table = page.getByTestId("customer-charges");
  await expect(table.getByRole("row")).toHaveCount(5);
  // Only the retry and the charge it repeated are highlighted; the other purchases say what they are.
  await expect(table.getByTestId("duplicate-flag")).toHaveCount(2);
  // Each row by its own charge link (a row also names its twin, by the start of its id).
  const rowOf = (id: string) =>
    table.getByRole("row").filter({ has: page.getByRole("link", { name: id, exact: true }) });
  for (const id of [first!.id, retry.id]) await expect(rowOf(id)).toHaveClass(/highlight/);
  const purchaseRow = rowOf(otherCard.id);
  await expect(purchaseRow).not.toHaveClass(/highlight/);
  await expect(purchaseRow).toContainText("Two purchases");
  await expect(page.getByTestId("customer-summary")).toContainText("2 likely double charges");

  // The scan leaves charges younger than its settle time (5 s, still committing perhaps) to the next sweep.
  await page.waitForTimeout(Math.max(0, madeAt + 6_000 - Date.now()));
  sweepOnce();
  const until = new Date(Date.now() + 60_000);
  await page.goto(`/admin/incident?since=${from.toISOString()}&until=${until.toISOString()}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("charged twice");
  const pairs = page.getByTestId("incident-pairs");
  const ours = pairs.getByRole("row").filter({ hasText: customer });
  await expect(ours).toHaveCount(1);
  await expect(ours).toContainText("Likely double charge, no key");
  await expect(ours.getByTestId("gap")).toHaveText(/^\d+\.\d s$/);
  await expect(ours.getByRole("button", { name: "Refund the second charge…" })).toBeVisible();
  await expect(ours.getByTestId("case-state")).toHaveAttribute("data-state", "to_refund");
  await expect(page.getByTestId("gap-histogram")).toBeVisible();
  // The two requests side by side: both keyless, identical.
  await ours.getByText("Compare the requests").click();
  await expect(ours.getByTestId("pair-requests")).toContainText("none (keyless)");
  await expect(ours).toContainText("Identical canonical requests");

  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Export CSV" }).click();
  const csv = readFileSync(await (await download).path(), "utf8");
  expect(csv.split("\r\n")[0]).toContain("customer_id");
  expect(csv).toContain(`${customer},`);
  expect(csv).toContain(retry.id);
  expect(csv).not.toContain(otherCard.id);

  // The duplicates list, likely ones only: the retry; the second purchase is not among them.
  await page.goto("/admin/duplicates?evidence=likely");
  await expect(page.getByTestId("duplicates")).toContainText(customer);
  await expect(page.getByTestId("duplicates").getByRole("link", { name: otherCard.id })).toHaveCount(0);
});

test("support lists a customer's charges between two local times", async ({ page, request }) => {
  const customer = `cus_time_${run}`;
  const a = await madeCharge(request, { customer, amount: 1000, key: randomUUID() });
  await new Promise((r) => setTimeout(r, 2_200));
  const b = await madeCharge(request, { customer, amount: 2000, key: randomUUID() });
  await new Promise((r) => setTimeout(r, 2_200));
  const c = await madeCharge(request, { customer, amount: 3000, key: randomUUID() });

  await login(page, "support");
  await page.goto(`/admin/customers/${customer}`);
  const table = page.getByTestId("customer-charges");
  await expect(table.getByRole("row")).toHaveCount(4);
  // Times are local (Auckland) to the second, UTC on hover.
  const bRow = table.getByRole("row").filter({ has: page.getByRole("link", { name: b.id }) });
  const shown = (await bRow.locator("time").first().locator("span").first().textContent())!;
  expect(shown).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  const offset = new Date(`${shown.replace(" ", "T")}Z`).getTime() - Date.parse(b.created_at);
  expect(Math.round(offset / 3_600_000)).toBe(13); // Auckland in December, not UTC

  await page.getByLabel("Charged from (local time)").fill(shifted(shown, 0));
  await page.getByLabel("Charged until (local time)").fill(shifted(shown, 1));
  await expect(page).toHaveURL(/since=.*until=/);
  await expect(table.getByRole("row")).toHaveCount(2);
  await expect(table).toContainText(b.id);
  await expect(table).not.toContainText(a.id);
  await expect(table).not.toContainText(c.id);
});

test("a pasted key opens its record; a partial one filters the list below the search", async ({ page, request }) => {
  const key = `e2e-land-${run}-${randomUUID()}`;
  const made = await madeCharge(request, { amount: 3100, customer: `cus_land_${run}`, key });
  await login(page, "support");
  await page.getByLabel(/Search by an idempotency key/).fill(key);
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await page.waitForURL(/\/admin\/requests\/\d+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText(key);

  await searchRequestLog(page, made.id);
  await page.waitForURL(new RegExp(`/admin/charges/${made.id}$`));

  await searchRequestLog(page, `e2e-land-${run}`);
  const list = page.getByTestId("search-results").getByTestId("request-log");
  await expect(list.getByRole("row")).toHaveCount(2);
  await expect(list).toContainText(key);
  await expect(page.getByTestId("request-count")).toHaveText(`1 requests whose key starts with “e2e-land-${run}”`);
});

test("a record behind an open mismatch warns; an engineer closes it with a note, seen in the audit log", async ({
  page,
  request,
}) => {
  const made = await madeCharge(request, { amount: 3100, customer: `cus_ledger_${run}`, key: `e2e-ledger-${run}` });
  const conn = await appConnection();
  const [record] = await conn.query("SELECT idempotent_request_id AS id FROM charges WHERE id = ?", [made.id]);
  const run0 = await conn.query(
    `INSERT INTO reconciliation_runs (instance, started_at, window_start, window_end)
     VALUES ('e2e', NOW(6), NOW(6), NOW(6))`,
  );
  await conn.query(
    `INSERT INTO ledger_mismatches (fingerprint, kind, charge_id, request_id, evidence, first_run_id, detected_at,
       last_seen_at) VALUES (?, 'amount_or_currency_mismatch', ?, ?, ?, ?, NOW(6), NOW(6))`,
    [`e2e:${run}`, made.id, record.id, JSON.stringify({ app: "31.00 usd", gateway: "32.00 usd" }), run0.insertId],
  );
  await conn.end();

  await login(page, "engineer");
  await page.goto(`/admin/charges/${made.id}`);
  await expect(page.getByTestId("mismatch-warning")).toContainText("Amount or currency differs");
  await page.goto(`/admin/requests/${record.id}`);
  await expect(page.getByTestId("mismatch-warning")).toContainText("32.00 usd");

  await page.getByTestId("mismatch-warning").getByRole("link", { name: "See it in the ledger" }).click();
  const item = page.getByTestId("mismatch").filter({ hasText: made.id });
  await item.getByRole("button", { name: "Close with a note…" }).click();
  const note = `refunded 1.00 at the provider, ticket ${run}`;
  await page.getByRole("dialog").getByLabel(/Note/).fill(note);
  await page.getByRole("dialog").getByRole("button", { name: "Close the mismatch" }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(page.getByTestId("mismatch").filter({ hasText: made.id })).toHaveCount(0);

  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Audit log" }).click();
  await expect(page.getByRole("main")).toContainText("ledger_mismatch.resolved");
  await expect(page.getByRole("main")).toContainText(note);
  await page.goto(`/admin/charges/${made.id}`);
  await expect(page.getByTestId("charge-detail")).toBeVisible();
  await expect(page.getByTestId("mismatch-warning")).toHaveCount(0);
});

test("on a 390 px phone the lists are cards: key, amount, status and time read whole, no sideways scroll", async ({
  page,
  request,
}) => {
  const key = `e2e-phone-${run}-${randomUUID()}`;
  const customer = `cus_phone_${run}`;
  await madeCharge(request, { amount: 3100, customer, key });
  await keylessRetry({ customer, card: "tok_slow_2500", amount: 3100 });
  await new Promise((r) => setTimeout(r, 6_000)); // past the duplicate scan's settle time
  sweepOnce();
  await login(page, "support");
  await page.setViewportSize({ width: 390, height: 844 });
  const lists: [string, string][] = [
    ["/admin", "request-log"],
    [`/admin/customers/${customer}`, "customer-charges"],
    ["/admin/duplicates", "duplicates"],
    ["/admin/incident", "incident-pairs"],
  ];
  for (const [path, testId] of lists) {
    await page.goto(path);
    const list = page.getByTestId(testId);
    await expect(list.locator("tbody tr").first()).toBeVisible();
    const row = await list.locator("tbody tr").first().boundingBox();
    expect(row!.width, `${path}: a row fits the phone`).toBeLessThanOrEqual(390);
    // Every cell's right edge in one round trip (one per cell took most of a minute beside a CPU hog).
    const outside = await list
      .locator("tbody tr")
      .first()
      .evaluate((tr) =>
        [...tr.querySelectorAll("td")].flatMap((td, i) => (td.getBoundingClientRect().right > 390 ? [i] : [])),
      );
    expect(outside, `${path}: the cells outside the screen`).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  }
  // The request log's card shows the whole key, its label beside it.
  await page.goto(`/admin?customer=${customer}`);
  const card = page.getByTestId("request-log").locator("tbody tr").filter({ hasText: key });
  await expect(card.getByRole("link", { name: key })).toBeVisible();
  const link = await card.getByRole("link", { name: key }).boundingBox();
  expect(link!.x + link!.width).toBeLessThanOrEqual(390);
  await expect(card.locator('td[data-label="Status"]')).toContainText("201");
  await expect(card.locator('td[data-label="Created"] time')).toBeVisible();
});
