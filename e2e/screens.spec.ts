/**
 * Support's screens of issue 40 as they are read, in Chromium at 1280 and 390 px: the incident view, a double
 * charge's refunded half and its other half with the refund dialog's override warning, the customer's page, the
 * duplicates and the request log, each with no serious axe violation, nothing wider than a phone, and no console
 * error on the way (a hydration mismatch is one). One time zone per screen, switched in the header. On a phone the
 * search box keeps its width after a search; at 1280 px the rollout's switches sit beside the clients' names.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { appQuery, keylessRetry, login, madeCharge, seriousAxeViolations, sweepOnce, watchConsole } from "./lib";

test.use({ timezoneId: "America/Los_Angeles" });

const run = randomUUID().slice(0, 8);

test("support's screens at 1280 and 390 px: axe clean, no console error, one time zone", async ({ page }) => {
  test.setTimeout(300_000);
  const errors = watchConsole(page);
  const customer = `cus_screens_${run}`;
  const retry = await keylessRetry({ customer, card: "tok_slow_2500", amount: 1800 });
  const [first] = await appQuery<{ id: string; requestedAt: Date }>(
    "SELECT id, requested_at AS requestedAt FROM charges WHERE customer_id = ? AND id <> ?",
    [customer, retry.id],
  );
  await page.waitForTimeout(6_000); // past the duplicate scan's settle time
  sweepOnce();

  await login(page, "support");
  // One half refunded, as support does it.
  await page.goto(`/admin/charges/${retry.id}`);
  await page.getByTestId("refunds").getByTestId("refund-button").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("combobox", { name: "Reason" }).selectOption("duplicate");
  await dialog.getByLabel(/^Note/).fill(`screens ${run}`);
  await dialog.getByRole("button", { name: "Refund 18.00 USD" }).click();
  await expect(dialog).toBeHidden();

  const screens: [string, string, string][] = [
    ["incident", "/admin/incident?hours=1", "Incident"],
    ["refunded half", `/admin/charges/${retry.id}`, "Charge"],
    ["other half", `/admin/charges/${first!.id}`, "Charge"],
    ["customer", `/admin/customers/${customer}`, "Customer"],
    ["duplicates", "/admin/duplicates?evidence=likely", "Possible duplicate charges"],
    ["request log", "/admin", "Request log"],
    ["abandoned", "/admin?abandoned=no_trace", "Request log"],
  ];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    for (const [name, path, heading] of screens) {
      await page.goto(path);
      await expect(page.getByRole("heading", { level: 1 })).toContainText(heading);
      await expect(page.getByRole("status").filter({ hasText: /^Loading/ })).toHaveCount(0);
      expect.soft(await seriousAxeViolations(page), `${name} at ${width} px`).toEqual([]);
      if (width === 390) {
        const wide = await page.evaluate(() => document.documentElement.scrollWidth);
        expect.soft(wide, `${name} is ${wide} px wide on a 390 px phone`).toBeLessThanOrEqual(390);
      }
    }
    // The other half's refund dialog, with its warning and the override, read the same way.
    await page.goto(`/admin/charges/${first!.id}`);
    await page.getByTestId("refunds").getByTestId("refund-button").click();
    await expect(dialog.getByTestId("twin-refunded")).toContainText(`screens ${run}`);
    expect.soft(await seriousAxeViolations(page), `the override dialog at ${width} px`).toEqual([]);
    await dialog.getByRole("button", { name: "Cancel" }).click();
  }

  // One zone per screen: local (Los Angeles) by default, UTC when chosen, the date range asked in the same.
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`/admin/customers/${customer}`);
  const row = page.getByTestId("customer-charges").getByRole("row").filter({ hasText: first!.id });
  const shown = () => row.locator("time").first().locator("span").first().textContent();
  const inZone = (zone: string) =>
    new Intl.DateTimeFormat("sv-SE", { timeZone: zone, dateStyle: "short", timeStyle: "medium" }).format(
      first!.requestedAt,
    );
  await expect.poll(shown).toBe(inZone("America/Los_Angeles"));
  await expect(page.getByLabel("Charged from (local time)")).toBeVisible();
  await page.getByTestId("time-zone").getByRole("combobox").selectOption("utc");
  await expect.poll(shown).toBe(`${inZone("UTC")} UTC`);
  await expect(page.getByLabel("Charged from (UTC)")).toBeVisible();
  await expect(page.getByTestId("last-refreshed")).toHaveText(/^Refreshed \d\d:\d\d:\d\d$/);
  // Kept in this browser: the next screen is in UTC too, then back to local.
  await page.goto("/admin/incident?hours=1");
  await expect(page.getByTestId("incident-summary")).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("incident-summary").locator("time").first()).toContainText("UTC");
  await page.getByTestId("time-zone").getByRole("combobox").selectOption("local");
  await expect(page.getByTestId("incident-summary").locator("time").first()).not.toContainText("UTC");

  expect(errors).toEqual([]);
});

test("on a phone the search box keeps its width after a search", async ({ page, request }) => {
  const key = `e2e-width-${run}`;
  await madeCharge(request, { key, amount: 500, customer: `cus_width_${run}` });
  await login(page, "support");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/admin");
  await expect(page.getByTestId("request-count")).toContainText(/matching requests|Too many rows/);
  const box = page.getByLabel(/Search by an idempotency key/);
  const before = (await box.boundingBox())!.width;
  expect(before, "the box fills the phone's card").toBeGreaterThanOrEqual(300);
  await box.fill(key.slice(0, 12));
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await expect(page.getByRole("button", { name: "Clear search" })).toBeVisible();
  await expect(page.getByTestId("search-results")).toContainText(key);
  const after = (await page.getByLabel(/Search by an idempotency key/).boundingBox())!.width;
  expect(after, "the same width after the search").toBeGreaterThanOrEqual(before - 1);
  // The quoted form the SDK sends lands on the record.
  await page.getByLabel(/Search by an idempotency key/).fill(`"${key}"`);
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await page.waitForURL(/\/admin\/requests\/\d+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText(key);
});

test("at 1280 px an engineer sees each client's switch beside its name", async ({ page }) => {
  await login(page, "engineer");
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto("/admin/rollout");
  const table = page.getByTestId("clients-keyless");
  const row = table.getByRole("row", { name: /Demo client/ });
  const button = row.getByRole("button", { name: /for Demo client/ });
  await expect(button).toBeVisible();
  const region = (await table.boundingBox())!;
  const shown = (await button.boundingBox())!;
  expect(shown.x + shown.width, "inside the table's box, without scrolling it").toBeLessThanOrEqual(
    region.x + region.width,
  );
  expect(shown.x + shown.width).toBeLessThanOrEqual(1280);
  await expect(row.getByRole("cell", { name: "Demo client", exact: true })).toBeVisible();
});
