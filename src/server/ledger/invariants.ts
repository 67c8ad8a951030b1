/**
 * The ledger invariants, checked over the real tables after a fault run
 * or a test run (and by anyone who wants to know, with `npm run reconcile`):
 * 1. at most one gateway charge or refund per operation,
 * 2. gateway and app money rows match 1:1, same amount (and currency),
 * 3. every stored 201 names an existing row (of its own record): a charge, a refund,
 * 4. refunded <= charged per charge, and its refunded amount is the sum of its refunds,
 * 5. nothing is left in progress, on any route.
 * 1, 2 and 4 are what the reconciliation finds; 3 and 5 are read from the tables.
 */
import { recordsInProgress } from "~/server/idempotency/reading";
import { MONEY_OPERATIONS } from "~/server/moneyRoutes";
import { answersWithoutTheirRow } from "./answersWithoutTheirRow";
import { describeCounts, reconcileLedger, type Finding, type UnlistedAppCharges } from "./reconcile";

export type InvariantReport = {
  findings: Finding[];
  repaired: number;
  gatewayCharges: number;
  appCharges: number;
  gatewayRefunds: number;
  appRefunds: number;
  unlisted: UnlistedAppCharges;
  /** Complete 201 records (ids) whose body names no charge of theirs. */
  answersWithoutCharge: string[];
  /** Records still in progress (ids). */
  inProgress: string[];
  ok: boolean;
};

export async function checkLedgerInvariants({
  since,
  until = new Date(),
}: {
  since: Date;
  until?: Date;
}): Promise<InvariantReport> {
  const reconciliation = await reconcileLedger({ since, until });
  const answersWithoutCharge: bigint[] = [];
  for (const { route, moneyTable } of MONEY_OPERATIONS) {
    answersWithoutCharge.push(...(await answersWithoutTheirRow(route, moneyTable, since)));
  }
  const inProgress = await recordsInProgress();
  const report = {
    findings: reconciliation.findings,
    repaired: reconciliation.repaired,
    gatewayCharges: reconciliation.gatewayCharges,
    appCharges: reconciliation.appCharges,
    gatewayRefunds: reconciliation.gatewayRefunds,
    appRefunds: reconciliation.appRefunds,
    unlisted: reconciliation.unlisted,
    answersWithoutCharge: answersWithoutCharge.map(String),
    inProgress: inProgress.map(String),
  };
  return {
    ...report,
    ok: report.findings.length === 0 && report.answersWithoutCharge.length === 0 && report.inProgress.length === 0,
  };
}

export function describeReport(report: InvariantReport): string {
  const lines = [
    `${describeCounts(report)}, repaired ${report.repaired}`,
    `mismatches ${report.findings.length}, stored 201s without their row ${report.answersWithoutCharge.length}, ` +
      `left in progress ${report.inProgress.length}`,
  ];
  for (const f of report.findings.slice(0, 20)) lines.push(`  ${f.kind} ${f.subject} ${JSON.stringify(f.evidence)}`);
  if (report.answersWithoutCharge.length)
    lines.push(`  201 without its row: records ${report.answersWithoutCharge.slice(0, 20).join(", ")}`);
  if (report.inProgress.length) lines.push(`  in progress: records ${report.inProgress.slice(0, 20).join(", ")}`);
  return lines.join("\n");
}
