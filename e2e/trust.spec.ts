/**
 * Issue 30, part B, as its users meet it in Chromium: an engineer enforces one client and the rollout's numbers
 * stay right; a role change needs its dialog (an arrow key on the select changes nothing); the pages say what is
 * wrong with an address, never read a loading page as a finding, never show a library's error words, keep the
 * navigation on a 404, and have a skip link and a "refreshed" time.
 */
import { randomUUID } from "node:crypto";
import { expect, test, type Page } from "@playwright/test";
import { cellsOf, charge, count, login } from "./lib";

const run = randomUUID().slice(0, 8);

test("an engineer enforces one client and the numbers stay right", async ({ page, request }) => {
  test.setTimeout(120_000);
  // An accepted keyless request: Demo client blocks the global switch.
  expect((await charge(request)).status()).toBe(201);
  await login(page, "engineer");
  await page.goto("/admin/rollout");
  const decision = page.getByTestId("safe-to-enforce");
  const blocking = decision.locator("li").filter({ hasText: "Blocking:" });
  await expect(blocking).toContainText("Demo client");
  const table = page.getByRole("table", { name: /Requests in the last 24 h/ });
  const row = table.getByRole("row", { name: /Demo client/ });
  /** The row's numbers, by column name (NaN for a column the page does not have). */
  const numbers = async () => {
    const headers = await table.getByRole("columnheader").allTextContents();
    const cells = await cellsOf(row);
    const column = (name: string) => cells[headers.indexOf(name)];
    return {
      operations: count(column("Keyed operations")),
      attempts: count(column("Keyed attempts")),
      accepted: count(column("Keyless accepted")),
      refused: count(column("Keyless refused")),
      cleanFrom: column("Clean from"),
    };
  };
  await expect(row).toContainText("optional");
  const before = await numbers();
  expect(before.cleanFrom).toMatch(/\d\d:\d\d:\d\d/);

  await page.getByRole("button", { name: "Require the header for Demo client" }).click();
  await page
    .getByRole("dialog")
    .getByLabel(/Reason/)
    .fill("Demo client sends keys now");
  await page.getByRole("dialog").getByRole("button", { name: "Require the header" }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(row).toContainText("required for this client");

  // After enforcing: three keyless requests refused; one keyed operation sent three times (two are replays),
  // and another.
  for (let i = 0; i < 3; i++) expect((await charge(request)).status()).toBe(400);
  const key = `e2e-trust-${run}`;
  for (let i = 0; i < 3; i++) expect((await charge(request, { key })).status()).toBe(201);
  expect((await charge(request, { key: `${key}-2` })).status()).toBe(201);

  // Enforced on its own, it no longer blocks the global switch (nothing else blocks in this run's data, or
  // something else is named).
  await page.reload();
  await expect(row).toBeVisible();
  await expect(blocking.filter({ hasText: "Demo client" })).toHaveCount(0);
  await expect
    .poll(
      async () => {
        await page.reload();
        await expect(row).toBeVisible();
        return numbers();
      },
      { timeout: 30_000, message: "refused apart, keyed as operations with attempts apart" },
    )
    .toEqual({
      operations: before.operations + 2,
      attempts: before.attempts + 4,
      accepted: before.accepted,
      refused: before.refused + 3,
      cleanFrom: "enforced",
    });
  await expect(page.getByTestId("enforced-clients")).toContainText("Demo client");
  // The chart marks the switch.
  await expect(page.getByTestId("keyless-chart")).toContainText("Demo client required");

  // Back to the global mode: the refusals did not move "clean from".
  await page.getByRole("button", { name: "Follow the global mode for Demo client" }).click();
  await page
    .getByRole("dialog")
    .getByLabel(/Reason/)
    .fill("end of the test");
  await page.getByRole("dialog").getByRole("button", { name: "Follow the global mode" }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(row).toContainText("optional");
  expect((await numbers()).cleanFrom).toBe(before.cleanFrom);
});

test("the rollout chart shows its whole axis and fits a phone", async ({ page }) => {
  await login(page, "support");
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.goto("/admin/rollout");
    const chart = page.getByTestId("keyless-chart");
    // The caption names the axis' top ("axis up to 40 %"): that tick is drawn, labelled, and inside the chart.
    const caption = await page.locator("figcaption").filter({ hasText: "axis up to" }).textContent();
    const topValue = /axis up to (\d+(?:\.\d+)?) %/.exec(caption ?? "")![1];
    const topTick = chart.locator("text").filter({ hasText: new RegExp(`^${topValue} %$`) });
    await expect(topTick).toBeVisible();
    const box = (await chart.boundingBox())!;
    const top = (await topTick.boundingBox())!;
    expect(top.y, "the top tick's label is not clipped").toBeGreaterThanOrEqual(box.y);
    expect(top.x, "nor cut on the left").toBeGreaterThanOrEqual(box.x);
    expect(box.x + box.width, `the chart fits at ${width} px`).toBeLessThanOrEqual(width);
  }
});

async function addSupport(page: Page, email: string) {
  await page.goto("/admin/staff");
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Name").fill("Trust Support");
  await page.getByLabel("Role", { exact: true }).selectOption("support");
  await page.getByRole("button", { name: "Add staff member" }).click();
  const box = page.getByRole("status", { name: new RegExp(`First password of ${email}`) });
  await box.getByRole("button", { name: "I have copied it" }).click();
}

test("a role change needs its dialog; an arrow key in the select changes nothing", async ({ page }) => {
  const email = `trust-${run}@example.com`;
  await login(page, "engineer");
  await addSupport(page, email);
  const select = () => page.getByLabel(`Role of ${email}`);

  await select().focus();
  await page.keyboard.press("ArrowDown");
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await page.waitForTimeout(500); // anything the key sent would have been answered by now
  await page.reload();
  await expect(select()).toHaveValue("support");

  // Chosen, and cancelled in the dialog: still support.
  await select().selectOption("engineer");
  await page.getByRole("button", { name: `Change the role of ${email}` }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText(`${email} is support now. As engineer they can`);
  await expect(dialog).toContainText("Their sessions end at once");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await page.reload();
  await expect(select()).toHaveValue("support");

  // Confirmed: engineer.
  await select().selectOption("engineer");
  await page.getByRole("button", { name: `Change the role of ${email}` }).click();
  await dialog.getByRole("button", { name: "Make engineer" }).click();
  await expect(dialog).toHaveCount(0);
  await page.reload();
  await expect(select()).toHaveValue("engineer");

  // Disabling needs its dialog too, which says what happens.
  await page.getByRole("button", { name: `Disable ${email}` }).click();
  await expect(dialog).toContainText("signed out at once");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("row", { name: email })).toContainText("active");
});

test("addresses that cannot be shown say so; loading is not a finding; errors are plain; 404 has navigation", async ({
  page,
}) => {
  await login(page, "support");
  // An unreadable filter: said, and nothing listed (not everything).
  await page.goto("/admin?status=999");
  const problems = page.getByTestId("url-problems");
  await expect(problems).toContainText("status=“999” is not a valid status");
  await expect(page.getByTestId("request-log")).toHaveCount(0);
  await expect(page.getByTestId("empty-state")).toHaveCount(0);
  await problems.getByRole("button", { name: "Remove this filter" }).click();
  await expect(problems).toHaveCount(0);
  await expect(page.getByTestId("request-log").or(page.getByTestId("empty-state"))).toBeVisible();

  // An impossible range: said, not "no match".
  await page.goto("/admin?since=2026-02-02T00:00:00.000Z&until=2026-02-01T00:00:00.000Z");
  await expect(problems).toContainText("the range is impossible: since is after until");
  await expect(page.getByTestId("empty-state")).toHaveCount(0);

  // A page with a default says the link's value is ignored.
  await page.goto("/admin/duplicates?window=soon");
  await expect(problems).toContainText("window=“soon” is not a valid window");

  // Loading is not a finding: while the duplicates load, nothing says the sweeper has not run.
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const slow = (url: URL) => url.pathname.includes("customers.duplicates");
  await page.route(slow, async (route) => {
    await held;
    await route.continue().catch(() => {}); // the page may have moved on
  });
  await page.goto("/admin/duplicates");
  await expect(page.getByText("Charges checked up to: loading…")).toBeVisible();
  await expect(page.getByText(/the sweeper has not run/)).toHaveCount(0);
  release();
  await expect(page.getByText("Charges checked up to: loading…")).toHaveCount(0);
  await page.unroute(slow);

  // A proxy's error page instead of an answer: a plain message, not the client library's words.
  const broken = (url: URL) => url.pathname.includes("requests.list");
  await page.route(broken, (route) => route.fulfill({ status: 502, contentType: "text/html", body: "<h1>Bad</h1>" }));
  await page.goto("/admin");
  const failure = page.getByRole("alert").filter({ hasText: "Could not load the request log" });
  await expect(failure).toContainText("no usable answer from the server");
  await expect(page.getByText(/Unable to transform/)).toHaveCount(0);
  await page.unroute(broken);

  // The dashboard's 404 keeps its navigation.
  await page.goto(`/admin/no-such-page-${run}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("Page not found");
  await expect(
    page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Requests" }),
  ).toBeVisible();
  await expect(page).toHaveTitle("Page not found · Charges");
});

test("every page: a skip link first, and when it last refreshed", async ({ page }) => {
  await login(page, "support");
  for (const path of ["/admin", "/admin/customers", "/admin/duplicates", "/admin/rollout", "/admin/ledger"]) {
    await page.goto(path);
    await expect(page.getByTestId("last-refreshed")).toHaveText(/^Refreshed \d\d:\d\d:\d\d$/);
    await page.keyboard.press("Tab");
    const skip = page.getByRole("link", { name: "Skip to content" });
    await expect(skip).toBeFocused();
    await expect(skip).toBeVisible();
    await page.keyboard.press("Enter");
    await expect(page.locator("main#main")).toBeFocused();
  }
});
