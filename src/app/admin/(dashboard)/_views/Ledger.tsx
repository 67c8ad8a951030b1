"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { parseAsBoolean, useQueryState } from "nuqs";
import { useTRPC } from "~/trpc/react";
import { absolute } from "../../_components/format";
import { Badge } from "../../_components/ui/Badge";
import { LoadMore } from "../../_components/ui/DataTable";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";

const KIND_LABELS: Record<string, string> = {
  gateway_charge_without_app_charge: "Gateway charge the app does not know",
  app_charge_without_gateway_charge: "App charge the gateway does not have",
  amount_or_currency_mismatch: "Amount or currency differs",
  several_gateway_charges_for_one_operation: "Several gateway charges for one operation",
  gateway_refund_without_app_refund: "Gateway refund the app does not know",
  app_refund_without_gateway_refund: "App refund the gateway does not have",
  refund_amount_mismatch: "Refund amount differs",
  several_gateway_refunds_for_one_operation: "Several gateway refunds for one operation",
  refunds_exceed_charge: "Refunds exceed the charge, or do not add up",
};

export function Ledger() {
  const trpc = useTRPC();
  const [resolved, setResolved] = useQueryState("resolved", parseAsBoolean.withDefault(false));
  const status = useQuery(trpc.ledger.status.queryOptions(undefined, { refetchInterval: 30_000 }));
  const mismatches = useInfiniteQuery(
    trpc.ledger.mismatches.infiniteQueryOptions(
      { includeResolved: resolved, limit: 25 },
      { getNextPageParam: (p) => p.nextCursor },
    ),
  );
  const items = mismatches.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <>
      <PageHeader title="Ledger">
        The reconciliation compares the gateway&apos;s charge list with the app&apos;s charges, repairs what it can
        prove and keeps the rest here with its evidence.
      </PageHeader>
      <QueryState query={status} what="the reconciliation status">
        {(s) => (
          <section className="card space-y-1" data-testid="ledger-status" aria-label="Last reconciliation">
            <h2>Last reconciliation</h2>
            {s.lastRun ? (
              <>
                <p className="m-0">
                  <Time date={s.lastRun.startedAt} /> on {s.lastRun.instance},{" "}
                  {`window ${absolute(s.lastRun.windowStart)} to ${absolute(s.lastRun.windowEnd)}`}
                  {s.lastRun.error ? (
                    <span className="bad"> — failed: {s.lastRun.error}</span>
                  ) : !s.lastRun.finishedAt ? (
                    " — still running"
                  ) : (
                    ""
                  )}
                </p>
                <p className="m-0 text-sm muted">
                  Gateway charges {s.lastRun.gatewayCharges}, app charges {s.lastRun.appCharges}, gateway refunds{" "}
                  {s.lastRun.gatewayRefunds}, app refunds {s.lastRun.appRefunds}, repaired {s.lastRun.repaired},{" "}
                  <span data-testid="healed">healed {s.lastRun.healed}</span>, mismatches {s.lastRun.mismatches}.
                </p>
              </>
            ) : (
              <p className="m-0 muted">
                No reconciliation has run yet (the sweeper runs one every RECONCILE_INTERVAL_MS; `npm run reconcile`).
              </p>
            )}
            <p className={`m-0 font-medium ${s.openMismatches === 0 ? "good" : "bad"}`} data-testid="open-mismatches">
              {s.openMismatches === 0
                ? "No open mismatch: every charge checked is on both sides, once, with the same amount."
                : `${s.openMismatches} open mismatches.`}
            </p>
          </section>
        )}
      </QueryState>
      <section className="space-y-2" aria-label="Mismatches">
        <div className="flex flex-wrap items-center justify-between gap-2">
          <h2>Mismatches</h2>
          <label className="flex items-center gap-2 text-sm">
            <input type="checkbox" checked={resolved} onChange={(e) => void setResolved(e.target.checked)} /> include
            resolved ones
          </label>
        </div>
        <QueryState
          query={mismatches}
          what="the mismatches"
          isEmpty={() => items.length === 0}
          empty={resolved ? "No mismatch was ever found." : "No open mismatch."}
        >
          {() => (
            <>
              <ul className="space-y-3">
                {items.map((m) => (
                  <li key={m.id} className="card space-y-1">
                    <p className="m-0 flex flex-wrap items-center gap-2">
                      <Badge tone={m.healedRefundId ? "ok" : m.resolvedAt ? "neutral" : "danger"}>
                        {m.healedRefundId ? "healed" : m.resolvedAt ? "resolved" : "open"}
                      </Badge>
                      <strong>{KIND_LABELS[m.kind] ?? m.kind}</strong> <Time date={m.detectedAt} />
                    </p>
                    <p className="m-0 text-sm">
                      {m.chargeId && (
                        <>
                          Charge <Link href={`/admin/charges/${m.chargeId}`}>{m.chargeId}</Link>.{" "}
                        </>
                      )}
                      {m.requestId && (
                        <>
                          Request <Link href={`/admin/requests/${m.requestId}`}>#{m.requestId}</Link>.{" "}
                        </>
                      )}
                      {m.gatewayChargeId && (
                        <>
                          Gateway charge <code>{m.gatewayChargeId}</code>.
                        </>
                      )}
                    </p>
                    {/* biome-ignore lint/a11y/useSemanticElements: a focusable scrolling box (axe) */}
                    <pre
                      className="overflow-x-auto rounded bg-slate-50 p-2 text-xs"
                      tabIndex={0}
                      role="region"
                      aria-label={`Evidence of mismatch ${m.id}`}
                    >
                      {JSON.stringify(m.evidence, null, 2)}
                    </pre>
                    {m.resolutionNote && <p className="m-0 text-sm muted">Resolved: {m.resolutionNote}</p>}
                  </li>
                ))}
              </ul>
              <LoadMore query={mismatches} />
            </>
          )}
        </QueryState>
      </section>
    </>
  );
}
