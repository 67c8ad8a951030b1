"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { parseAsIsoDateTime, useQueryStates } from "nuqs";
import { useState } from "react";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { formatGap, formatMoney } from "../../_components/format";
import { RefundSlot } from "../../_components/RefundSlot";
import { DataTable } from "../../_components/ui/DataTable";
import { DateRange } from "../../_components/ui/DateRange";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { EvidenceBadge, PairRequests } from "./PairEvidence";

type Result = RouterOutputs["customers"]["incident"];
type Pair = Result["customers"][number]["pairs"][number];

const DAY = 24 * 3_600_000;

const columns: ColumnDef<Pair>[] = [
  {
    header: "Customer",
    cell: ({ row }) => (
      <Link href={`/admin/customers/${encodeURIComponent(row.original.customerId)}`}>{row.original.customerId}</Link>
    ),
  },
  { header: "Client", cell: ({ row }) => row.original.apiClient.name },
  { header: "Evidence", cell: ({ row }) => <EvidenceBadge evidence={row.original.evidence} /> },
  { header: "Amount", cell: ({ row }) => formatMoney(row.original.amountCents, row.original.currency) },
  { header: "Gap", cell: ({ row }) => <span data-testid="gap">{formatGap(row.original.gapMs)}</span> },
  { header: "Charged again", cell: ({ row }) => <Time date={row.original.createdAt} /> },
  { header: "Requests", cell: ({ row }) => <PairRequests pair={row.original} /> },
  {
    header: "Refund",
    cell: ({ row: { original: p } }) => <RefundSlot chargeId={p.id} evidence={p.evidence.key} />,
  },
];

function Histogram({ buckets }: { buckets: Result["histogram"] }) {
  const most = Math.max(1, ...buckets.map((b) => b.pairs));
  const label = (b: Result["histogram"][number]) => `${b.fromSeconds}–${b.toSeconds} s`;
  return (
    <figure className="card m-0" data-testid="gap-histogram">
      <figcaption className="mb-2 font-semibold">Seconds between the two charges</figcaption>
      {buckets.length === 0 ? (
        <p className="muted m-0">No pair in this range.</p>
      ) : (
        <ul className="m-0 list-none space-y-1 p-0">
          {buckets.map((b) => (
            <li key={b.fromSeconds} className="grid grid-cols-[5.5rem_minmax(0,1fr)_2.5rem] items-center gap-2 text-xs">
              <span>{label(b)}</span>
              <span className="block h-3 rounded bg-slate-100" aria-hidden="true">
                <span className="block h-3 rounded bg-red-700" style={{ width: `${(b.pairs / most) * 100}%` }} />
              </span>
              <span className="text-right" data-testid="histogram-count">
                {b.pairs}
              </span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}

/** Sums per currency: "75.00 USD, 10.00 EUR". */
function totals(customers: Result["customers"]) {
  const sums = new Map<string, number>();
  for (const c of customers) for (const p of c.pairs) sums.set(p.currency, (sums.get(p.currency) ?? 0) + p.amountCents);
  return [...sums].map(([currency, cents]) => formatMoney(cents, currency)).join(", ") || "nothing";
}

export function Incident() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  // The last day unless the address says otherwise; fixed at the first render, so the query's key stays put.
  const [fallback] = useState(() => ({ since: new Date(Date.now() - DAY), until: new Date() }));
  const [params, setParams] = useQueryStates({ since: parseAsIsoDateTime, until: parseAsIsoDateTime });
  const range = { since: params.since ?? fallback.since, until: params.until ?? fallback.until };
  const query = useQuery(trpc.customers.incident.queryOptions(range, { refetchInterval: 30_000 }));
  const [exporting, setExporting] = useState<string | null>(null);

  async function exportCsv() {
    setExporting("Preparing the CSV…");
    try {
      const { csv } = await queryClient.fetchQuery(trpc.customers.incidentCsv.queryOptions(range));
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([csv], { type: "text/csv;charset=utf-8" }));
      link.download = `incident-${range.since.toISOString()}-${range.until.toISOString()}.csv`.replace(/:/g, "");
      link.click();
      URL.revokeObjectURL(link.href);
      setExporting(null);
    } catch {
      setExporting("The CSV could not be prepared; try again.");
    }
  }

  return (
    <>
      <PageHeader title="Incident: customers charged twice">
        For a time range, every customer the sweeper found charged twice with evidence: two identical requests without a
        key, or under a new key moments later. Two purchases are left out (see{" "}
        <Link href="/admin/duplicates">Duplicates</Link> for every pair).
      </PageHeader>
      <section aria-label="Range" className="card flex flex-wrap items-end gap-3">
        <DateRange since={range.since} until={range.until} onChange={(r) => void setParams(r)} what="Charged again" />
        <button type="button" className="btn-secondary" onClick={() => void exportCsv()} disabled={!query.data}>
          Export CSV
        </button>
        {exporting && (
          <p role="status" className="m-0 text-sm">
            {exporting}
          </p>
        )}
      </section>
      <QueryState query={query} what="the incident">
        {(r) => (
          <>
            <p className="m-0 font-medium" data-testid="incident-summary">
              {r.customers.length} customers charged twice with evidence, {r.pairs} pairs, {totals(r.customers)} to give
              back{r.truncated ? " (the first 2 000 pairs only: narrow the range)" : ""}.{" "}
              <span className="muted text-sm">
                Charges checked up to: {r.scannedUntil ? <Time date={r.scannedUntil} /> : "not yet"}
              </span>
            </p>
            <Histogram buckets={r.histogram} />
            {r.pairs === 0 ? (
              <p className="card muted" data-testid="empty-state">
                No customer was charged twice with evidence in this range.
              </p>
            ) : (
              <DataTable
                caption="Likely double charges, by customer"
                columns={columns}
                data={r.customers.flatMap((c) => c.pairs)}
                rowId={(p) => p.id}
                testId="incident-pairs"
              />
            )}
          </>
        )}
      </QueryState>
    </>
  );
}
