/**
 * What the browser tests share: signing in, charges through the API (a keyless retry too), a row's numbers, a
 * sweep, the app's database, the console.
 */
import { execFileSync } from "node:child_process";
import AxeBuilder from "@axe-core/playwright";
import { expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";
import * as mariadb from "mariadb";
import { serverScriptArgs } from "../scripts/lib/processes";
import { mysqlConnectionOptions } from "../src/lib/mysqlUrl";

export const apiKey = () => process.env.TEST_API_KEY!;

type ChargeOptions = { key?: string; card?: string; amount?: number; customer?: string };

/** POST /api/charges with the run's API key: keyless unless `key` is given. */
export function charge(request: APIRequestContext, opts: ChargeOptions = {}) {
  return request.post("/api/charges", {
    headers: { Authorization: `Bearer ${apiKey()}`, ...(opts.key ? { "Idempotency-Key": opts.key } : {}) },
    data: {
      amount_cents: opts.amount ?? 2500,
      currency: "usd",
      card_token: opts.card ?? "tok_visa",
      customer_id: opts.customer ?? "cus_e2e",
    },
  });
}

/** A charge that must be made (201): its object. */
export async function madeCharge(request: APIRequestContext, opts: ChargeOptions = {}) {
  const res = await charge(request, opts);
  expect(res.status()).toBe(201);
  return (await res.json()) as { id: string; created_at: string; gateway_charge_id: string };
}

export async function login(page: Page, who: "support" | "engineer") {
  await page.goto("/admin/login");
  await page.getByLabel("E-mail").fill(process.env[`TEST_${who.toUpperCase()}_EMAIL`]!);
  await page.getByLabel("Password").fill(process.env[`TEST_${who.toUpperCase()}_PASSWORD`]!);
  await page.getByRole("button", { name: "Sign in" }).click();
  // A sign-in checks the password with scrypt (memory-hard on purpose) and then loads the page whole: on a busy
  // machine that takes longer than an assertion's usual 5 s.
  await expect(page.getByTestId("whoami")).toContainText(who, { timeout: 30_000 });
  // Sign-in ends with a full page load, and whoami is server-rendered: wait until the request log is live (its count
  // is the browser's own query), or a search typed next is submitted as a plain form before React takes it.
  if (new URL(page.url()).pathname === "/admin") {
    await expect(page.getByTestId("request-count")).toContainText(/matching requests|Too many rows/);
  }
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

/**
 * The page as if its tab were in the background: the dashboard's refreshes stop (TanStack Query refetches on an
 * interval only in a visible document), so the next request the page makes is one a click asked for, however slowly
 * the machine runs. A navigation brings a fresh, visible document.
 */
export async function sendToBackground(page: Page) {
  await page.evaluate(() => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
    document.dispatchEvent(new Event("visibilitychange", { bubbles: true }));
  });
}

/** One sweep, as the worker runs it (a short reap time: the tests' records are minutes old at most). */
export function sweepOnce() {
  execFileSync(process.execPath, [...serverScriptArgs("src/worker/sweeper.ts"), "--once"], {
    env: { ...process.env, REAP_AFTER_MS: "1000", GATEWAY_TIMEOUT_MS: "500", LEASE_MARGIN_MS: "200" },
    stdio: "inherit",
  });
}

/**
 * A connection to the app's database, as the tests' admin user. Its connect timeout is a hang guard: the driver's
 * 1 s default once failed a data set's query while the machine was busy.
 */
export const appConnection = () =>
  mariadb.createConnection({ ...mysqlConnectionOptions(process.env.TEST_APP_DATABASE_URL!), connectTimeout: 10_000 });

/** A query on the app's database, as the tests' admin user. */
export async function appQuery<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
  const conn = await appConnection();
  try {
    return (await conn.query(sql, values)) as T[];
  } finally {
    await conn.end();
  }
}

/**
 * A keyless purchase that times out at a client and is sent again: its client gives up once the request holds a
 * record (a request gone before its claim is not worked on), then sends the same body, and waits for it. With a
 * gateway slower than the client, both are charged.
 */
export async function keylessRetry(opts: { customer: string; card: string; amount: number; baseUrl?: string }) {
  const body = { amount_cents: opts.amount, currency: "usd", card_token: opts.card, customer_id: opts.customer };
  const send = (signal?: AbortSignal) =>
    fetch(`${opts.baseUrl ?? process.env.TEST_APP_URL}/api/charges`, {
      method: "POST",
      headers: { Authorization: `Bearer ${apiKey()}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
  const records = async () =>
    Number(
      (
        await appQuery<{ n: bigint }>("SELECT COUNT(*) AS n FROM idempotent_requests WHERE customer_id = ?", [
          opts.customer,
        ])
      )[0]!.n,
    );
  const client = new AbortController();
  const first = send(client.signal).catch(() => null);
  await expect.poll(records, { timeout: 30_000 }).toBeGreaterThan(0);
  client.abort();
  expect(await first, "the client gave up before the gateway answered").toBeNull();
  const retry = await send();
  expect(retry.status).toBe(201);
  return (await retry.json()) as { id: string };
}

/** Console errors and uncaught page errors (a hydration mismatch is both): a page that logs one fails its test. */
export function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(`${page.url()}: ${msg.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`${page.url()}: ${error.message}`));
  return errors;
}

/** The serious and critical axe violations of the page as it is now. */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  const axe = await new AxeBuilder({ page }).analyze();
  return axe.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * A full-page screenshot into e2e/artifacts/ for a person to look at, only with E2E_SCREENSHOTS=1: nothing asserts
 * on it, and rendering a tall page to PNG in software costs a CPU second that a loaded CI machine has not got.
 */
export async function screenshot(page: Page, name: string) {
  if (process.env.E2E_SCREENSHOTS === "1") await page.screenshot({ path: `e2e/artifacts/${name}.png`, fullPage: true });
}
