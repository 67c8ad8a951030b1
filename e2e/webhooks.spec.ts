/**
 * Webhooks in the dashboard, in Chromium: an engineer subscribes an endpoint (its secret shown once), sees each
 * delivery with its attempts and answers, sends one again (audited); the charge's page shows its event and where
 * it went. The receiver is a real HTTP server that answers 500 once, then 200.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { charge } from "./lib";

test("an engineer's endpoint: deliveries, attempts and answers, send again; the event on the charge's page", async ({
  page,
  request,
}) => {
  test.setTimeout(120_000);
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(String(req.headers["webhook-id"]));
    req.resume();
    if (seen.length === 1) res.writeHead(500).end("not yet");
    else res.writeHead(200).end("ok");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks-${Date.now()}`;
  try {
    // Signing in hashes a password (scrypt): on a loaded machine it takes longer than an assertion's default.
    await page.goto("/admin/login");
    await page.getByLabel("E-mail").fill(process.env.TEST_ENGINEER_EMAIL!);
    await page.getByLabel("Password").fill(process.env.TEST_ENGINEER_PASSWORD!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("whoami")).toContainText("engineer", { timeout: 30_000 });
    await page.goto("/admin/webhooks");
    await expect(page.getByRole("heading", { level: 1 })).toContainText("Webhooks");
    const client = page.getByLabel("API client");
    const demo = await client.locator("option", { hasText: "Demo client" }).first().getAttribute("value");
    await client.selectOption(demo!);
    await page.getByLabel("URL").fill(url);
    await page.getByLabel(/Event types/).fill("charge.succeeded");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    await expect(page.getByTestId("one-time-secret")).toContainText("whsec_");
    await page.getByRole("button", { name: "I have copied it" }).click();

    const made = await charge(request, { key: `e2e-webhooks-${Date.now()}` });
    expect(made.status()).toBe(201);
    const chargeId = (await made.json()).id as string;
    await expect.poll(() => seen.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);

    const section = page.getByRole("region", { name: `Endpoint ${url}` });
    await page.reload();
    await section.getByRole("button", { name: "Deliveries" }).click();
    const deliveries = section.getByRole("table", { name: `Deliveries to ${url}` });
    await expect(deliveries.getByRole("row").filter({ hasText: "charge.succeeded" })).toContainText("delivered");
    await deliveries.getByRole("button", { name: "2 attempts" }).click();
    const attempts = section.getByRole("list", { name: /Attempts of delivery/ });
    await expect(attempts).toContainText("HTTP 500");
    await expect(attempts).toContainText("not yet");
    await expect(attempts).toContainText("HTTP 200");

    await deliveries.getByRole("button", { name: "Send again" }).click();
    await expect.poll(() => seen.length, { timeout: 20_000 }).toBe(3);
    expect(new Set(seen).size, "the same event id on every delivery").toBe(1);

    await page.goto(`/admin/charges/${chargeId}`);
    const events = page.getByRole("region", { name: "Events" });
    await expect(events).toContainText("charge.succeeded");
    await expect(events).toContainText(url);
    await expect(events).toContainText("delivered");

    await page.goto("/admin/audit");
    await expect(page.locator("td", { hasText: "webhook_delivery.sent_again" }).first()).toBeVisible();
  } finally {
    // Leave no endpoint of the demo client behind for the other browser tests' charges.
    await page.goto("/admin/webhooks");
    const section = page.getByRole("region", { name: `Endpoint ${url}` });
    if (await section.count()) {
      await section.getByRole("button", { name: "Delete" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
      await expect(section).toHaveCount(0);
    }
    server.close();
  }
});
