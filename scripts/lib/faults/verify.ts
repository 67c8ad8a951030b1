/**
 * After a fault run: the ledger invariants over the whole run, and that every
 * answer a client saw agrees with the ledger. Runs in the fault runner's
 * process, whose environment points at the run's database and gateway.
 */
import { hostname } from "node:os";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { db } from "~/server/db";
import { deriveGatewayKey, gateway, type ListedGatewayCharge } from "~/server/gateway";
import { keyToBytes, decodeRecord } from "~/server/idempotency/reading";
import { checkLedgerInvariants, describeReport } from "~/server/ledger/invariants";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { env } from "~/env";
import { answeredLate, boundMs, longestSweepGap, type Outage, type Sweep } from "./finalInTime";
import { contradictedAnswers, type NoMoneyAnswer } from "./noMoneyAnswers";
import { mustBeRefused, type RequiredWindow } from "./requiredWindows";
import type { ChargeObservation, Observation, RefundObservation } from "./run";
import { allGatewayRefunds, verifyRefunds } from "./verifyRefunds";

async function allGatewayCharges(since: Date, until: Date): Promise<ListedGatewayCharge[]> {
  const charges: ListedGatewayCharge[] = [];
  let cursor: string | undefined;
  do {
    const page = await gateway.listCharges({ since, until, cursor });
    charges.push(...page.charges);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return charges;
}

/** The run's complete money records whose stored answer is an error: each says that no money moved. */
async function noMoneyAnswers(since: Date): Promise<NoMoneyAnswer[]> {
  const rows = await db.idempotentRequest.findMany({
    where: { state: "complete", responseStatus: { gte: 400 }, createdAt: { gte: since } },
  });
  return rows.flatMap((row): NoMoneyAnswer[] => {
    const record = decodeRecord(row);
    const kind = record.route === CHARGES_ROUTE ? "charge" : record.route === REFUNDS_ROUTE ? "refund" : null;
    if (!kind || record.phase.name !== "complete") return [];
    const { status, body } = record.phase.response;
    let code: string | null = null;
    try {
      code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? null;
    } catch {}
    return [
      { recordId: record.id, kind, key: record.idempotencyKey, gatewayKey: deriveGatewayKey(record), status, code },
    ];
  });
}

/** Every complete record of the run: when it was first and last attempted, when its answer was stored, by whom. */
async function finishedRecords(since: Date) {
  const rows = await db.idempotentRequest.findMany({
    where: { state: "complete", createdAt: { gte: since } },
    select: { id: true, route: true, createdAt: true, lastAttemptAt: true, updatedAt: true, finishedBy: true },
  });
  return rows.map((r) => ({ ...r, completedAt: r.updatedAt }));
}

/**
 * The background sweeper's sweeps, in order of start: not this process's own (the fault run's extra sweeps, the
 * closing ones), which would stand in for a sweeper that died.
 */
async function sweepsOf(since: Date): Promise<Sweep[]> {
  const runs = await db.sweepRun.findMany({
    where: { startedAt: { gte: since }, instance: { not: `${hostname()}:${process.pid}` } },
    orderBy: { startedAt: "asc" },
  });
  return runs.map((r) => ({ startedAt: r.startedAt.getTime(), finishedAt: r.finishedAt?.getTime() ?? null }));
}

export async function verifyRun(
  observations: Observation[],
  since: Date,
  requiredWindows: RequiredWindow[],
  outages: Outage[],
) {
  const until = new Date();
  const violations: string[] = [];
  const report = await checkLedgerInvariants({ since, until });
  if (!report.ok) violations.push(`ledger: ${describeReport(report)}`);

  const gatewayCharges = await allGatewayCharges(since, until);
  const gatewayRefunds = await allGatewayRefunds(since, until);
  const byId = new Map(gatewayCharges.map((c) => [c.id, c]));

  // Every stored "no money moved" is true at the gateway: nothing was made under it, before or after the answer.
  const stored = await noMoneyAnswers(since);
  violations.push(...contradictedAnswers(stored, gatewayCharges, gatewayRefunds));

  // Every operation's answer was final within its bound, whatever its client did.
  const bound = {
    reapAfterMs: env.REAP_AFTER_MS,
    gatewayTimeoutMs: env.GATEWAY_TIMEOUT_MS,
    lateLandingMs: gateway.lateLandingMs,
  };
  const finished = await finishedRecords(since);
  const sweeps = await sweepsOf(since);
  violations.push(...answeredLate(finished, bound, outages, sweeps));

  // At most one gateway charge per operation (a client's key; a keyless request is its own record).
  const perOperation = new Map<string, number>();
  for (const c of gatewayCharges) {
    const op = c.metadata?.idempotencyKey
      ? `${c.metadata.apiClientId}:${c.metadata.idempotencyKey}`
      : `record:${c.metadata?.requestId}`;
    perOperation.set(op, (perOperation.get(op) ?? 0) + 1);
  }
  for (const [op, n] of perOperation) if (n > 1) violations.push(`${n} gateway charges for operation ${op}`);

  // Every answer a client saw agrees with the ledger.
  const clientIds = (await db.apiClient.findMany({ orderBy: { id: "asc" }, select: { id: true } })).map((c) => c.id);
  /** The gateway's charges for an observation's operation: keyed, its client's key; keyless, its own customer. */
  const chargesOf = (o: ChargeObservation) =>
    gatewayCharges.filter((c) =>
      o.key === null
        ? c.customerId === o.body.customer_id
        : c.metadata?.idempotencyKey === o.key && c.metadata?.apiClientId === String(clientIds[o.client]),
    );
  let insideWindows = 0;
  for (const o of observations) {
    const refusable = mustBeRefused(requiredWindows, o);
    if (refusable) insideWindows += 1;
    if (o.route === "refunds") {
      // A keyless refund sent and answered inside the window: refused whatever its body (the header's error comes
      // before the body's and the charge's), never worked on. 503 or 500: the database was down.
      const refused = o.status === 400 && o.code === "idempotency_key_required";
      if (refusable && !refused && [201, 400, 402, 404, 409, 502].includes(o.status ?? 0))
        violations.push(
          `refund operation ${o.index} (keyless): sent while the header was required, answered ${o.status}`,
        );
      continue;
    }
    const what = `operation ${o.index} (${o.kind}${o.key ? ` ${o.key}` : ""})`;
    if (o.status === 201) {
      const charge = o.chargeId ? await db.charge.findUnique({ where: { id: o.chargeId } }) : null;
      if (!charge) violations.push(`${what}: answered 201 with charge ${o.chargeId}, which the app does not have`);
      else if (!byId.has(charge.gatewayChargeId))
        violations.push(`${what}: its charge ${charge.id} has no gateway charge`);
      else if (charge.amountCents !== o.body.amount_cents)
        violations.push(`${what}: charged ${charge.amountCents}, asked ${o.body.amount_cents}`);
    }
    if (o.status === 402) {
      const charge = o.chargeId ? await db.charge.findUnique({ where: { id: o.chargeId } }) : null;
      if (charge?.status !== "failed")
        violations.push(`${what}: answered 402 for charge ${o.chargeId}, not a failed charge in the app`);
    }
    // A keyless request sent and answered while the header was required of its client: its mode read saw
    // "required", so nothing may be charged for it on either side.
    if (refusable || (o.status === 400 && o.code === "idempotency_key_required")) {
      if (o.key !== null) violations.push(`${what}: a keyed request was told its key is required`);
      // 503 or 500 are fine (the database was down before its mode was known), a charge's answer is not.
      if (refusable && [201, 402, 502].includes(o.status ?? 0))
        violations.push(`${what}: sent while the header was required, answered ${o.status}`);
      const charged = chargesOf(o).map((c) => c.id);
      if (charged.length > 0) violations.push(`${what}: refused, but the gateway charged ${charged}`);
      // Each keyless operation names a customer of its own.
      if (await db.charge.findFirst({ where: { customerId: o.body.customer_id } }))
        violations.push(`${what}: refused, but the app recorded a charge for it`);
    }
    if (o.status === 500 && o.code === "request_abandoned") {
      // "No charge was made" only when none could still be made: no charge at all, given back or not.
      const made = chargesOf(o).filter((c) => c.status === "succeeded");
      if (made.length > 0)
        violations.push(`${what}: answered request_abandoned, but the gateway charged ${made.map((c) => c.id)}`);
      const row = o.key
        ? await db.idempotentRequest.findUnique({
            where: { idempotencyKey_route: { idempotencyKey: keyToBytes(o.key), route: "POST /api/charges" } },
          })
        : await db.idempotentRequest.findFirst({ where: { idempotencyKey: null, customerId: o.body.customer_id } });
      const record = row ? decodeRecord(row) : null;
      if (record?.phase.name !== "complete" || record.phase.finishedBy !== "abandoned") {
        violations.push(
          `${what}: answered request_abandoned, but its record is ${record ? JSON.stringify(record.phase) : "gone"}`,
        );
      }
    }
  }
  const refunds = await verifyRefunds(
    observations.filter((o): o is RefundObservation => o.route === "refunds"),
    gatewayCharges,
    gatewayRefunds,
  );
  violations.push(...refunds.violations);
  return {
    violations,
    report,
    finished: finished.length,
    /** How long the slowest operation took to its final answer, and the bound without outages (the margin). */
    slowestFinalMs: Math.max(0, ...finished.map((r) => r.completedAt.getTime() - r.createdAt.getTime())),
    finalBoundMs: boundMs(bound),
    longestSweepGapMs: longestSweepGap(sweeps, since.getTime(), until.getTime()),
    gatewayCharges: gatewayCharges.length,
    gatewayRefunds: gatewayRefunds.length,
    insideWindows,
    noMoneyAnswers: {
      charges: stored.filter((a) => a.kind === "charge").length,
      refunds: stored.filter((a) => a.kind === "refund").length,
    },
  };
}
