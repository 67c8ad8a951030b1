/**
 * The four ledger invariants, checked over the real tables after a fault run
 * or a test run (and by anyone who wants to know, with `npm run reconcile`):
 * 1. at most one gateway charge per operation,
 * 2. gateway charges and app charges match 1:1, same amount and currency,
 * 3. every stored 201 names an existing charge (of its own record),
 * 4. nothing is left in progress.
 * 1 and 2 are what the reconciliation finds; 3 and 4 are read from the tables.
 */
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { answersWithoutTheirCharge, recordsInProgress } from "~/server/idempotency";
import { describeCounts, reconcileLedger, type Finding, type UnlistedAppCharges } from "./reconcile";

export type InvariantReport = {
  findings: Finding[];
  repaired: number;
  gatewayCharges: number;
  appCharges: number;
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
  const answersWithoutCharge = await answersWithoutTheirCharge(CHARGES_ROUTE, since);
  const inProgress = await recordsInProgress(CHARGES_ROUTE);
  const report = {
    findings: reconciliation.findings,
    repaired: reconciliation.repaired,
    gatewayCharges: reconciliation.gatewayCharges,
    appCharges: reconciliation.appCharges,
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
    `mismatches ${report.findings.length}, stored 201s without their charge ${report.answersWithoutCharge.length}, ` +
      `left in progress ${report.inProgress.length}`,
  ];
  for (const f of report.findings.slice(0, 20)) lines.push(`  ${f.kind} ${f.subject} ${JSON.stringify(f.evidence)}`);
  if (report.answersWithoutCharge.length)
    lines.push(`  201 without charge: records ${report.answersWithoutCharge.slice(0, 20).join(", ")}`);
  if (report.inProgress.length) lines.push(`  in progress: records ${report.inProgress.slice(0, 20).join(", ")}`);
  return lines.join("\n");
}
