/**
 * Four eyes on a large refund, as two people in two browsers: support asks (the dialog shows their limits), the
 * request waits on Approvals where its requester cannot approve it, an engineer approves, and the gateway makes
 * one refund (issue 43). The test stack sends refunds above 50 000.00 for approval.
 */
import { randomUUID } from "node:crypto";
import { expect, test } from "@playwright/test";
import { appQuery, login, madeCharge, watchConsole } from "./lib";

test("a refund above the threshold waits for a second person, who approves it; the gateway refunds once", async ({
  browser,
  request,
}) => {
  const { id: chargeId } = await madeCharge(request, {
    amount: 6_000_000,
    customer: `cus_big_${randomUUID().slice(0, 8)}`,
  });

  const supportContext = await browser.newContext();
  const support = await supportContext.newPage();
  const supportConsole = watchConsole(support);
  await login(support, "support");
  await support.goto(`/admin/charges/${chargeId}`);
  await support.getByTestId("refund-button").click();
  const dialog = support.getByRole("dialog");
  await expect(dialog.getByTestId("refund-limits")).toContainText("Above 50000.00 a second person approves");
  await dialog.getByRole("combobox", { name: "Reason" }).selectOption("requested_by_customer");
  await dialog.getByLabel(/^Note/).fill("Customer cancelled the whole order");
  await dialog.getByRole("button", { name: "Refund 60000.00 USD" }).click();
  await expect(dialog).toBeHidden();
  await expect(support.getByTestId("refund-outcome")).toContainText("Sent for approval");

  // The requester sees the request on Approvals, and cannot approve it.
  await support.goto("/admin/approvals");
  const own = support.getByTestId("approval-request").filter({ hasText: chargeId });
  await expect(own).toContainText("Your own request: another staff member decides.");
  await expect(own.getByRole("button", { name: /^Approve/ })).toHaveCount(0);

  // The second person, in a browser of their own.
  const engineerContext = await browser.newContext();
  const engineer = await engineerContext.newPage();
  const engineerConsole = watchConsole(engineer);
  await login(engineer, "engineer");
  await engineer.getByRole("link", { name: "Approvals" }).click();
  const request_ = engineer.getByTestId("approval-request").filter({ hasText: chargeId });
  await expect(request_).toContainText("Customer cancelled the whole order");
  await request_.getByRole("button", { name: "Approve 60000.00 USD" }).click();
  await engineer.getByRole("dialog").getByRole("button", { name: "Approve and refund" }).click();
  await expect(engineer.getByTestId("approval-outcome")).toContainText("Approved and refunded");
  await expect(engineer.getByTestId("approval-request").filter({ hasText: chargeId })).toHaveCount(0);

  await support.goto(`/admin/charges/${chargeId}`);
  await expect(support.getByTestId("refunds").getByTestId("refund-list").locator(":scope > li")).toHaveCount(1);
  // On the record: asked, approved, made; each once.
  const audited = await appQuery<{ action: string }>(
    "SELECT action FROM audit_events WHERE target_id = ? AND action LIKE 'refund.%' ORDER BY id",
    [chargeId],
  );
  expect(audited.map((a) => a.action)).toEqual(["refund.requested", "refund.approved", "refund.created"]);
  expect(supportConsole).toEqual([]);
  expect(engineerConsole).toEqual([]);
  await supportContext.close();
  await engineerContext.close();
});
