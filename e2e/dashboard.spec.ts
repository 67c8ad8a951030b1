/**
 * The dashboard as its users use it, in Chromium: support finds a customer's
 * charges and spots a duplicate, reads a request's timeline, shares a filtered
 * log link, sees failures as failures; an engineer reads the rollout and
 * enforces one client, then the global mode; support cannot. Every page is
 * checked with axe, for width on a phone, for CSP violations, and (with
 * E2E_SCREENSHOTS=1) shot at 1280 and 390 px into e2e/artifacts/.
 */
import { randomUUID } from "node:crypto";
import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Locator, type Page } from "@playwright/test";
import { charge, keylessRetry, login, screenshot, sendToBackground, sweepOnce, watchConsole } from "./lib";

function watchCsp(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (msg) => {
    if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
  });
  return violations;
}

/**
 * No serious or critical axe violation at this width (the phone layout has its own: cards, not tables); no
 * sideways scroll on a phone; a screenshot into e2e/artifacts/ when asked for.
 */
async function checkPage(page: Page, name: string, width: number) {
  const axe = await new AxeBuilder({ page }).analyze();
  const serious = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  // Soft: one run reports every page's violations.
  expect
    .soft(
      serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
      `${name} at ${width} px: axe`,
    )
    .toEqual([]);
  if (width === 390) {
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    expect.soft(wide, `${name} is ${wide} px wide on a 390 px phone`).toBeLessThanOrEqual(390);
    // No text runs out of its card (a table scrolls inside its own box, which keeps it in).
    const overflowing = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>(".card")]
        .filter((card) => card.scrollWidth > card.clientWidth + 1)
        .map((card) => (card.getAttribute("aria-label") ?? card.textContent ?? "").slice(0, 60)),
    );
    expect.soft(overflowing, `${name}: cards whose content runs out of them at 390 px`).toEqual([]);
  }
  await screenshot(page, `${name}-${width}`);
}

const run = randomUUID().slice(0, 8);
const customer = `cus_e2e_${run}`;

test("anonymous visitors are sent to the login page, and back to the page they asked for", async ({ page }) => {
  await page.goto("/admin");
  await expect(page).toHaveURL(/\/admin\/login$/);
  await expect(page).toHaveTitle("Sign in · Charges");
  await page.getByLabel("E-mail").fill("support@example.com");
  await page.getByLabel("Password").fill("wrong password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("Wrong e-mail or password.")).toBeVisible();

  await page.goto("/admin/rollout?granularity=day");
  await expect(page).toHaveURL(/\/admin\/login\?next=/);
  await page.getByLabel("E-mail").fill(process.env.TEST_SUPPORT_EMAIL!);
  await page.getByLabel("Password").fill(process.env.TEST_SUPPORT_PASSWORD!);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/admin\/rollout\?granularity=day$/);
});

test("support finds a customer's charges and spots a duplicate", async ({ page, request }) => {
  const violations = watchCsp(page);
  // The incident: a keyless client retries a timed-out charge, and the customer pays twice.
  await keylessRetry({ customer, card: "tok_slow_2500", amount: 3100 });
  expect((await charge(request, { customer, amount: 999, key: randomUUID() })).status()).toBe(201);

  await login(page, "support");
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Customers" }).click();
  await expect(page.getByRole("link", { name: "Customers" })).toHaveAttribute("aria-current", "page");
  await page.getByLabel(/Customer id/).fill(customer);
  await page.getByRole("button", { name: "Show charges" }).click();
  await expect(page).toHaveTitle(`Customer ${customer} · Charges`);
  const table = page.getByRole("table", { name: `Charges of ${customer}, newest first` });
  await expect(table.getByRole("row")).toHaveCount(4);
  await expect(table.getByTestId("duplicate-flag")).toHaveCount(2);
  await expect(page.getByTestId("customer-summary")).toContainText("2 likely double charges");
  await expect(table).toContainText("keyless");

  await table
    .getByRole("row")
    .filter({ has: page.getByTestId("duplicate-flag") })
    .first()
    .getByRole("link", { name: /^ch_/ })
    .first()
    .click();
  await expect(page.getByTestId("duplicate-warning")).toBeVisible();
  await expect(page.getByTestId("charge-detail")).toContainText("31.00 USD");

  // The sweeper leaves charges younger than 5 s for its next scan (they may still be committing).
  await page.waitForTimeout(5_500);
  sweepOnce();
  await page.getByRole("link", { name: "Duplicates" }).click();
  await expect(page.getByTestId("duplicates")).toContainText(customer);
  expect(violations).toEqual([]);
});

test("support opens a request and reads its timeline", async ({ page, request }) => {
  const key = `e2e-timeline-${run}`;
  const slow = charge(request, { key, card: "tok_slow_2000", customer });
  await new Promise((r) => setTimeout(r, 500));
  expect((await charge(request, { key, card: "tok_slow_2000", customer })).status()).toBe(409);
  expect((await slow).status()).toBe(201);
  const replay = await charge(request, { key, card: "tok_slow_2000", customer });
  expect(replay.headers()["idempotent-replay"]).toBe("true");

  await login(page, "support");
  await page.getByLabel(/Search by an idempotency key/).fill(key.slice(0, 15));
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`q=${key.slice(0, 15)}`));
  await page.getByTestId("search-results").getByRole("link", { name: key }).click();
  await expect(page).toHaveTitle(/^Request #\d+ · Charges$/);
  await expect(page.getByTestId("request-detail")).toContainText("Complete");
  await expect(page.getByTestId("request-fields")).toContainText(customer);
  await expect(page.getByTestId("request-fields")).toContainText("never stored");
  await expect(page.locator("body")).not.toContainText("tok_slow_2000");
  // The timeline's events are written in batches within a second, after the answers; the page refreshes every 5 s.
  // A page that opened before the replay's event was written shows it at its next refresh.
  const timeline = page.getByTestId("timeline");
  const refreshed = { timeout: 15_000 };
  await expect(timeline.locator('[data-kind="claimed"]')).toBeVisible(refreshed);
  await expect(timeline.locator('[data-kind="in_progress"]')).toBeVisible(refreshed);
  await expect(timeline.locator('[data-kind="completed"]')).toContainText("201", refreshed);
  await expect(timeline.locator('[data-kind="replayed"]')).toBeVisible(refreshed);
  await expect(page.getByTestId("event-counts")).toContainText("1 × 409", refreshed);
});

test("what support types into the search before the page comes alive is what gets searched", async ({
  page,
  request,
}) => {
  const key = `e2e-early-${run}`;
  expect((await charge(request, { key, customer })).status()).toBe(201);
  await login(page, "support");
  // The page's scripts wait until the text is in the server-rendered box: a slow page load, made certain.
  let release = () => {};
  const scriptsHeld = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route("**/_next/static/chunks/**", async (route) => {
    await scriptsHeld;
    await route.continue();
  });
  await page.goto("/admin", { waitUntil: "commit" });
  await page.getByLabel(/Search by an idempotency key/).fill(key.slice(0, 14));
  release();
  await expect(page.getByTestId("request-count")).toContainText(/matching requests|Too many rows/);
  await expect(page.getByLabel(/Search by an idempotency key/)).toHaveValue(key.slice(0, 14));
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`q=${key.slice(0, 14)}`));
  await expect(page.getByTestId("search-results").getByRole("link", { name: key })).toBeVisible();
});

test("support shares a filtered log link, and the link shows the same", async ({ page, browser, request }) => {
  expect((await charge(request, { key: `e2e-declined-${run}`, card: "tok_declined", customer })).status()).toBe(402);
  await login(page, "support");
  await page.getByLabel("API client").selectOption({ label: "Demo client" });
  await page.getByLabel("Stored status").selectOption("402");
  await page.getByLabel("Customer id", { exact: true }).fill(customer);
  await page.getByLabel("Customer id", { exact: true }).press("Enter");
  await expect(page).toHaveURL(/status=402/);
  await expect(page).toHaveURL(/customer=/);
  const log = page.getByTestId("request-log");
  await expect(log).toContainText(`e2e-declined-${run}`);
  await expect(page.getByTestId("request-count")).toHaveText("1 matching requests");
  const link = page.url();

  const other = await browser.newContext();
  const colleague = await other.newPage();
  await login(colleague, "support");
  await colleague.goto(link);
  await expect(colleague.getByLabel("Stored status")).toHaveValue("402");
  await expect(colleague.getByTestId("request-log")).toContainText(`e2e-declined-${run}`);
  await expect(colleague.getByTestId("request-log").getByRole("row")).toHaveCount(2);
  await other.close();
});

test("a failed query is an error with a retry, not an empty list; an ended session goes to sign-in and back", async ({
  page,
  context,
  request,
}) => {
  // A charge of its own, so that the customer's page has a table when this test runs alone.
  expect((await charge(request, { customer, key: randomUUID() })).status()).toBe(201);
  await login(page, "support");
  // tRPC batches queries into one request: fail every batch that carries the log's.
  const failLog = (url: URL) => url.pathname.includes("requests.list");
  await page.route(failLog, (route) => route.fulfill({ status: 500, body: "{}" }));
  await page.goto("/admin?phase=held");
  const failure = page.getByRole("alert").filter({ hasText: "Could not load the request log" });
  await expect(failure).toBeVisible();
  await expect(page.getByTestId("empty-state")).toHaveCount(0);
  // The retry asks itself, not the log's next refresh (which would hide a dead button): in the background, the page
  // refreshes nothing.
  await sendToBackground(page);
  await page.unroute(failLog);
  const asked = page.waitForRequest((req) => failLog(new URL(req.url())));
  await failure.getByRole("button", { name: "Retry" }).click();
  await asked;
  await expect(failure).toHaveCount(0);
  await expect(page.getByTestId("request-log").or(page.getByTestId("empty-state"))).toBeVisible();

  await page.goto(`/admin/customers/${customer}`);
  await expect(page.getByRole("table", { name: /Charges of/ })).toBeVisible();
  // Signed out in another tab of the same browser.
  const tab = await context.newPage();
  await tab.goto("/admin/account");
  await tab.getByRole("button", { name: "Sign out" }).click();
  await expect(tab).toHaveURL(/\/admin\/login$/);
  await expect(page).toHaveURL(/\/admin\/login$/, { timeout: 40_000 });
  await page.getByLabel("E-mail").fill(process.env.TEST_SUPPORT_EMAIL!);
  await page.getByLabel("Password").fill(process.env.TEST_SUPPORT_PASSWORD!);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/customers/${customer}$`));
});

test("request and rollout pages: a failed query is an error with a working retry, not empty or loading", async ({
  page,
  request,
}) => {
  const key = `e2e-errors-${run}`;
  expect((await charge(request, { key, customer })).status()).toBe(201);
  await login(page, "support");
  await page.getByLabel(/Search by an idempotency key/).fill(key);
  await page.getByRole("button", { name: "Search", exact: true }).click(); // a whole key opens its record
  await page.waitForURL(/\/admin\/requests\/\d+$/);
  const detailPath = new URL(page.url()).pathname;
  const id = detailPath.split("/").at(-1)!;

  /** Fails the batches that carry `procedure` until Retry is pressed: an error, never an empty or endless page. */
  async function failureThenRetry(path: string, procedure: string, what: string, loaded: Locator) {
    let failing = true;
    const carries = (url: URL) => url.pathname.includes(procedure);
    await page.route(carries, (route) => (failing ? route.fulfill({ status: 500, body: "{}" }) : route.continue()));
    await page.goto(path);
    const failure = page.getByRole("alert").filter({ hasText: `Could not load ${what}` });
    await expect(failure).toBeVisible();
    await expect(page.getByRole("status").filter({ hasText: /^Loading/ })).toHaveCount(0);
    await expect(page.getByText(/There is no request record/)).toHaveCount(0);
    await expect(loaded).toHaveCount(0);
    // The retry asks itself, not the page's next refresh: in the background, the page refreshes nothing.
    await sendToBackground(page);
    failing = false;
    const asked = page.waitForRequest((req) => carries(new URL(req.url())));
    await failure.getByRole("button", { name: "Retry" }).click();
    await asked;
    await expect(failure).toHaveCount(0);
    await expect(loaded).toBeVisible();
    await page.unroute(carries);
  }
  await failureThenRetry(detailPath, "requests.byId", `request record ${id}`, page.getByTestId("request-detail"));
  await expect(page.getByTestId("request-detail")).toContainText("Complete");
  await failureThenRetry("/admin/rollout", "rollout.status", "the rollout status", page.getByTestId("safe-to-enforce"));
});

test("a request record that does not exist is said so, not shown as a failure to retry", async ({ page }) => {
  await login(page, "support");
  await page.goto("/admin/requests/999999999999");
  const missing = page.getByRole("alert").filter({ hasText: "There is no request record" });
  await expect(missing).toContainText("There is no request record 999999999999");
  await expect(missing).not.toContainText("Could not load");
  await expect(missing.getByRole("button", { name: "Retry" })).toHaveCount(0);
  await expect(page.getByRole("status").filter({ hasText: /^Loading/ })).toHaveCount(0);
});

test("support reads the rollout but is told the switch is not theirs", async ({ page, request }) => {
  expect((await charge(request, {})).status()).toBe(201); // keyless
  await login(page, "support");
  await page.getByRole("link", { name: "Rollout" }).click();
  await expect(page.getByTestId("safe-to-enforce")).toContainText("Not yet safe");
  await expect(page.getByTestId("safe-to-enforce")).toContainText("Demo client");
  await expect(page.getByTestId("not-yours")).toContainText("Only engineers");
  await expect(page.getByRole("button", { name: /Switch to/ })).toHaveCount(0);
  await expect(page.getByRole("button", { name: /Require the header/ })).toHaveCount(0);
  await expect(page.getByTestId("keyless-chart")).toBeVisible();
  await expect(page.getByRole("table", { name: /Requests in the last 24 h/ })).toContainText("Demo client");
});

test("a per-client switch's dialog keeps its reason while the page refreshes with new numbers", async ({
  page,
  request,
}) => {
  await login(page, "engineer");
  await page.goto("/admin/rollout");
  await expect(page.getByTestId("current-mode")).toHaveText("optional");
  await page.getByRole("button", { name: "Require the header for Demo client" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel(/Reason/).fill("half-typed reason");
  // A keyless charge changes the client's numbers; the page's next refresh (every 15 s) renders them.
  expect((await charge(request, {})).status()).toBe(201);
  await page.waitForResponse((r) => r.url().includes("rollout.status"), { timeout: 30_000 });
  await page.waitForTimeout(500); // the new numbers rendered
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel(/Reason/)).toHaveValue("half-typed reason");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(dialog).toHaveCount(0);
});

test("the key reuse list refreshes without taking the focus off a link", async ({ page, request }) => {
  const key = `e2e-reuse-focus-${run}`;
  expect((await charge(request, { key })).status()).toBe(201);
  expect((await charge(request, { key, amount: 1 })).status()).toBe(422);
  await login(page, "support");
  await page.goto("/admin/reuses");
  const original = page.getByRole("row", { name: new RegExp(key) }).getByRole("link", { name: /^record #/ });
  await original.focus();
  await expect(original).toBeFocused();
  // Another reuse changes the group's numbers; the next refresh (every 5 s) renders them and must keep the same
  // link, and its focus.
  expect((await charge(request, { key, amount: 2 })).status()).toBe(422);
  await page.waitForResponse((r) => r.url().includes("requests.reuses"));
  await page.waitForTimeout(500);
  await expect(original).toBeFocused();
});

test("an engineer enforces one client with a reason, then the global mode", async ({ page, request }) => {
  const violations = watchCsp(page);
  expect((await charge(request, {})).status()).toBe(201); // keyless, so the switch has an impact to show
  await login(page, "engineer");
  await page.goto("/admin/rollout");
  await expect(page.getByTestId("current-mode")).toHaveText("optional");

  await page.getByRole("button", { name: "Require the header for Demo client" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("Demo client sent");
  await dialog.getByLabel(/Reason/).fill("Demo client sends keys now");
  await dialog.getByRole("button", { name: "Require the header" }).click();
  await expect(dialog).toHaveCount(0);
  await expect(page.getByRole("table", { name: /Requests in the last 24 h/ })).toContainText(
    "required for this client",
  );
  expect((await charge(request, {})).status()).toBe(400);
  expect((await charge(request, { key: randomUUID() })).status()).toBe(201);
  await expect(page.getByTestId("audit-log")).toContainText("Demo client sends keys now");
  await page.getByRole("button", { name: "Follow the global mode for Demo client" }).click();
  await page
    .getByRole("dialog")
    .getByLabel(/Reason/)
    .fill("back to the global mode for the next step");
  await page.getByRole("dialog").getByRole("button", { name: "Follow the global mode" }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  expect((await charge(request, {})).status()).toBe(201);

  await page.getByRole("button", { name: "Switch to required" }).click();
  await expect(page.getByRole("dialog").getByTestId("switch-impact")).toContainText("Demo client");
  await page
    .getByRole("dialog")
    .getByLabel(/Reason/)
    .fill("every client sends keys");
  await page.getByRole("dialog").getByRole("button", { name: "Switch to required" }).click();
  await expect(page.getByTestId("current-mode")).toHaveText("required");
  await expect(page.getByTestId("safe-to-enforce")).toContainText("Enforced for every client");
  await expect(page.getByTestId("audit-log")).toContainText("optional → required");
  const keyless = await charge(request, {});
  expect(keyless.status()).toBe(400);
  expect((await keyless.json()).error.code).toBe("idempotency_key_required");

  await page.getByRole("button", { name: "Switch to optional" }).click();
  await page
    .getByRole("dialog")
    .getByLabel(/Reason/)
    .fill("end of the test");
  await page.getByRole("dialog").getByRole("button", { name: "Switch to optional" }).click();
  await expect(page.getByTestId("current-mode")).toHaveText("optional");
  expect((await charge(request, {})).status()).toBe(201);
  expect(violations).toEqual([]);
});

test("every page and login: no serious axe violation at 1280 or 390 px, none wider than 390 px, screenshots", async ({
  page,
  request,
}) => {
  test.setTimeout(480_000);
  const violations = watchCsp(page);
  const consoleErrors = watchConsole(page); // a hydration mismatch (React #418) is one
  const created = await charge(request, { key: `e2e-pages-${run}`, customer });
  const chargeId = (await created.json()).id as string;
  await login(page, "engineer");
  await page.getByLabel(/Search by an idempotency key/).fill(`e2e-pages-${run}`);
  await page.getByRole("button", { name: "Search", exact: true }).click(); // a whole key opens its record
  await page.waitForURL(/\/admin\/requests\/\d+$/);
  const requestPath = new URL(page.url()).pathname;
  const pages: [string, string, string][] = [
    ["requests", "/admin", "Request log"],
    ["request-detail", requestPath, `e2e-pages-${run}`],
    ["customers", "/admin/customers", "Customers"],
    ["customer", `/admin/customers/${customer}`, "Customer"],
    ["charge", `/admin/charges/${chargeId}`, "Charge"],
    ["duplicates", "/admin/duplicates", "Possible duplicate charges"],
    ["incident", "/admin/incident", "Incident"],
    ["reuses", "/admin/reuses", "Key reuses"],
    ["rollout", "/admin/rollout", "Idempotency-Key rollout"],
    ["ledger", "/admin/ledger", "Ledger"],
    ["api-clients", "/admin/clients", "API clients"],
    ["webhooks", "/admin/webhooks", "Webhooks"],
    ["staff", "/admin/staff", "Staff"],
    ["audit", "/admin/audit", "Audit log"],
    ["account", "/admin/account", "Account"],
    ["not-found", `/admin/no-such-page-${run}`, "Page not found"],
  ];
  const titles = new Set<string>();
  const sweep = async (who: string, list: typeof pages, widths: (name: string) => number[]) => {
    for (const [name, path, heading] of list) {
      for (const width of widths(name)) {
        await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
        await page.goto(path);
        await expect(page.getByRole("heading", { level: 1 })).toContainText(heading);
        await expect(page.getByRole("status").filter({ hasText: /^Loading/ })).toHaveCount(0);
        if (width === 1280) titles.add(await page.title());
        await checkPage(page, `${name}${who}`, width);
      }
    }
  };
  await sweep("", pages, () => [1280, 390]);
  expect(titles.size, "every page has its own title").toBe(pages.length);
  // Support sees the same pages but the engineers' own: the same layouts at 1280 px, but a different rollout page
  // (no switches) at both widths. Support's own screens with data in them: e2e/screens.spec.ts.
  const engineersOnly = new Set(["api-clients", "webhooks", "staff", "audit"]);
  await page.context().clearCookies();
  await login(page, "support");
  await sweep(
    "-support",
    pages.filter(([name]) => !engineersOnly.has(name)),
    (name) => (name === "rollout" ? [1280, 390] : [1280]),
  );
  // The login page, as someone signed out sees it.
  await page.context().clearCookies();
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    await page.goto("/admin/login");
    await expect(page.getByRole("heading", { level: 1 })).toContainText("Charges dashboard");
    await checkPage(page, "login", width);
  }
  expect(violations).toEqual([]);
  // The 404 page's own document answers 404, which the browser logs: that status is the page's point.
  expect(consoleErrors.filter((e) => !/no-such-page-.*status of 404/.test(e))).toEqual([]);
});
