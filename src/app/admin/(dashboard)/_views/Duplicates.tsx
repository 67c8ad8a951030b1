"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { parseAsInteger, parseAsIsoDateTime, parseAsStringLiteral, useQueryStates } from "nuqs";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { formatGap, formatMoney } from "../../_components/format";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { DateRange } from "../../_components/ui/DateRange";
import { LiveRegion } from "../../_components/ui/LiveRegion";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { WINDOWS } from "./Customers";
import { EvidenceBadge, PairRequests } from "./PairEvidence";
import { RefundDialog } from "./Refunds";

type Item = RouterOutputs["customers"]["duplicates"]["items"][number];

const EVIDENCE_FILTERS = ["all", "likely", "two_purchases"] as const;
const EVIDENCE_LABELS = { all: "any", likely: "likely double charges", two_purchases: "two purchases" };

const columns: ColumnDef<Item>[] = [
  { header: "Paid again", cell: ({ row }) => <Time date={row.original.requestedAt} /> },
  { header: "Evidence", cell: ({ row }) => <EvidenceBadge evidence={row.original.evidence} /> },
  {
    header: "Customer",
    cell: ({ row }) => (
      <Link href={`/admin/customers/${encodeURIComponent(row.original.customerId)}`}>{row.original.customerId}</Link>
    ),
  },
  { header: "Amount", cell: ({ row }) => formatMoney(row.original.amountCents, row.original.currency) },
  { header: "Gap", cell: ({ row }) => <span data-testid="gap">{formatGap(row.original.gapMs)}</span> },
  { header: "Client", cell: ({ row }) => row.original.apiClient.name },
  { header: "Requests", cell: ({ row }) => <PairRequests pair={row.original} /> },
  {
    header: "Action",
    cell: ({ row: { original: p } }) =>
      p.evidence.likely ? <RefundDialog chargeId={p.id} label="Refund the second charge…" /> : null,
  },
];

export function Duplicates() {
  const trpc = useTRPC();
  const [params, setParams] = useQueryStates({
    window: parseAsInteger.withDefault(10),
    evidence: parseAsStringLiteral(EVIDENCE_FILTERS).withDefault("all"),
    since: parseAsIsoDateTime,
    until: parseAsIsoDateTime,
  });
  const list = useInfiniteQuery(
    trpc.customers.duplicates.infiniteQueryOptions(
      {
        windowMinutes: params.window,
        evidence: params.evidence,
        since: params.since ?? undefined,
        until: params.until ?? undefined,
        limit: 25,
      },
      { getNextPageParam: (p) => p.nextCursor, refetchInterval: 10_000 },
    ),
  );
  const items = list.data?.pages.flatMap((p) => p.items) ?? [];
  const scannedUntil = list.data?.pages[0]?.scannedUntil;
  return (
    <>
      <PageHeader title="Possible duplicate charges">
        Succeeded charges of the same client, customer, amount and currency paid closer together than the window, newest
        first, each with what its two requests show: identical requests, the second sent before the client had the
        first&apos;s answer, are likely double charges (highlighted); different requests are two purchases, and an
        identical one sent after the answer a repeat purchase. Found by the sweeper.{" "}
        <Link href="/admin/incident">Incident view</Link>
      </PageHeader>
      <UrlCheck parsers={{ window: parseAsInteger }} />
      <section aria-label="Filters" className="card flex flex-wrap items-end gap-3">
        <label className="field">
          Window
          <select
            className="input"
            value={params.window}
            onChange={(e) => void setParams({ window: Number(e.target.value) })}
          >
            {WINDOWS.map((m) => (
              <option key={m} value={m}>
                {m} minutes
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          Evidence
          <select
            className="input"
            value={params.evidence}
            onChange={(e) => void setParams({ evidence: e.target.value as (typeof EVIDENCE_FILTERS)[number] })}
          >
            {EVIDENCE_FILTERS.map((f) => (
              <option key={f} value={f}>
                {EVIDENCE_LABELS[f]}
              </option>
            ))}
          </select>
        </label>
        <DateRange since={params.since} until={params.until} onChange={(r) => void setParams(r)} what="Paid" />
      </section>
      <p className="muted m-0 text-sm">
        Charges checked up to:{" "}
        {/* Only an answer can say the sweeper has not run: loading or failing says nothing about it. */}
        {scannedUntil ? (
          <Time date={scannedUntil} />
        ) : list.isPending ? (
          "loading…"
        ) : list.data ? (
          "not yet (the sweeper has not run)"
        ) : (
          "unknown (the list could not be loaded)"
        )}
      </p>
      <LiveRegion updatedAt={list.dataUpdatedAt} summary={`${items.length} possible duplicates shown.`} />
      <QueryState
        query={list}
        what="possible duplicates"
        isEmpty={() => items.length === 0}
        empty="No possible duplicate charges within this window and range."
      >
        {() => (
          <>
            <DataTable
              caption={`Possible duplicates within ${params.window} minutes, newest first`}
              columns={columns}
              data={items}
              rowId={(i) => i.id}
              highlight={(i) => i.evidence.likely}
              testId="duplicates"
            />
            <LoadMore query={list} />
          </>
        )}
      </QueryState>
    </>
  );
}
