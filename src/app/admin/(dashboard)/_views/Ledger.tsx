"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { parseAsBoolean, useQueryState } from "nuqs";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { Badge } from "../../_components/ui/Badge";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { LoadMore } from "../../_components/ui/DataTable";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time, TimeText } from "../../_components/ui/Time";

type Mismatch = RouterOutputs["ledger"]["mismatches"]["items"][number];

/** An engineer closes a mismatch with a note saying what was done; the note and who closed it go to the audit log. */
function CloseMismatch({ m }: { m: Mismatch }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const resolve = useMutation(
    trpc.ledger.resolve.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.ledger.pathKey() }),
    }),
  );
  return (
    <ConfirmDialog
      trigger={
        <button type="button" className="btn-secondary">
          Close with a note…
        </button>
      }
      title={`Close mismatch #${m.id}`}
      confirmLabel="Close the mismatch"
      pending={resolve.isPending}
      error={resolve.error?.message ?? null}
      onConfirm={(note) => resolve.mutateAsync({ id: m.id, note })}
      reasonLabel="Note: what was done (kept with the mismatch and in the audit log)"
    >
      <p className="m-0">
        {m.label}
        {m.chargeId ? `, charge ${m.chargeId}` : ""}
        {m.gatewayChargeId ? `, gateway charge ${m.gatewayChargeId}` : ""}.
      </p>
      <p className="m-0">
        Close it only once it is put right outside the app (a refund at the provider, say). A later reconciliation that
        finds the same problem opens it again.
      </p>
    </ConfirmDialog>
  );
}

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
  const me = useQuery(trpc.account.me.queryOptions());
  const engineer = me.data?.role === "engineer";
  return (
    <>
      <PageHeader title="Ledger">
        The reconciliation compares the gateway&apos;s charge list with the app&apos;s charges, repairs what it can
        prove and keeps the rest here with its evidence.
      </PageHeader>
      <UrlCheck parsers={{ resolved: parseAsBoolean }} />
      <QueryState query={status} what="the reconciliation status">
        {(s) => (
          <section className="card space-y-1" data-testid="ledger-status" aria-label="Last reconciliation">
            <h2>Last reconciliation</h2>
            {s.lastRun ? (
              <>
                <p className="m-0">
                  <Time date={s.lastRun.startedAt} /> on {s.lastRun.instance}, window{" "}
                  <TimeText date={s.lastRun.windowStart} /> to <TimeText date={s.lastRun.windowEnd} />
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
                No reconciliation has run yet (the sweeper runs one regularly; engineers can run one at once).
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
                  <li key={m.id} id={`mismatch-${m.id}`} className="card space-y-1" data-testid="mismatch">
                    <div className="flex flex-wrap items-center justify-between gap-2">
                      <p className="m-0 flex flex-wrap items-center gap-2">
                        <Badge tone={m.healedRefundId ? "ok" : m.resolvedAt ? "neutral" : "danger"}>
                          {m.healedRefundId ? "healed" : m.resolvedAt ? "resolved" : "open"}
                        </Badge>
                        <strong>{m.label}</strong> <Time date={m.detectedAt} />
                      </p>
                      {engineer && !m.resolvedAt && <CloseMismatch m={m} />}
                    </div>
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
                    {m.resolvedAt && (
                      <p className="m-0 text-sm muted">
                        Resolved <Time date={m.resolvedAt} />
                        {m.resolutionNote ? `: ${m.resolutionNote}` : " by a later reconciliation."}
                      </p>
                    )}
                    {m.resolvedAt && m.resolvedBy !== null && m.lastSeenAt > m.resolvedAt && (
                      <p className="m-0 text-sm warn">
                        Seen again by a reconciliation after it was closed: <Time date={m.lastSeenAt} />
                      </p>
                    )}
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
