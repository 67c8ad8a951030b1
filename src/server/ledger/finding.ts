import type { LedgerMismatchKind } from "~/generated/prisma/client";

/** What a reconciliation could not prove right, with its evidence (stored as a ledger mismatch). */
export type Finding = {
  kind: LedgerMismatchKind;
  /** What the finding is about, unique per kind: a later run finds the same row again. */
  subject: string;
  gatewayChargeId?: string;
  chargeId?: string;
  requestId?: bigint;
  evidence: Record<string, unknown>;
};
