"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { parseAsInteger, parseAsIsoDateTime, useQueryStates } from "nuqs";
import { useState } from "react";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { formatGap, formatMoney } from "../../_components/format";
import { Badge, type BadgeTone } from "../../_components/ui/Badge";
import { DataTable } from "../../_components/ui/DataTable";
import { DateRange } from "../../_components/ui/DateRange";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { EvidenceBadge, PairRequests } from "./PairEvidence";
import { RefundDialog } from "./Refunds";

type Result = RouterOutputs["customers"]["incident"];
type Case = Result["cases"][number];

/** The preset range when the address names none: the last day. */
const DEFAULT_HOURS = 24;
const MAX_HOURS = 92 * 24;

const STATE_DISPLAY: Record<Case["status"]["state"], { label: string; tone: BadgeTone }> = {
  to_refund: { label: "not refunded", tone: "warning" },
  refunding: { label: "refund in flight", tone: "progress" },
  refunded: { label: "refunded", tone: "ok" },
  both_refunded: { label: "both charges refunded", tone: "danger" },
};

function RefundState({ c }: { c: Case }) {
  const shown = STATE_DISPLAY[c.status.state];
  const first = c.status.firstRefund;
  return (
    <div className="space-y-1 text-sm" data-testid="case-state" data-state={c.status.state}>
      <Badge tone={shown.tone}>{shown.label}</Badge>
      {first && (
        <p className="m-0">
          <Link href={`/admin/charges/${first.chargeId}`}>{first.chargeId.slice(0, 10)}…</Link> by {first.by},{" "}
          <Time date={first.at} showRelative={false} />
          {first.notes[0] && <span className="block">“{first.notes[0].note}”</span>}
        </p>
      )}
    </div>
  );
}

const columns: ColumnDef<Case>[] = [
  {
    header: "Customer",
    cell: ({ row: { original: c } }) => (
      <>
        <Link href={`/admin/customers/${encodeURIComponent(c.customerId)}`}>{c.customerId}</Link>
        <span className="muted block text-xs">{c.apiClient.name}</span>
      </>
    ),
  },
  {
    header: "Evidence",
    cell: ({ row: { original: c } }) => (
      <div className="space-y-1">
        <EvidenceBadge evidence={c.evidence} />
        <p className="m-0 text-sm">
          <span data-testid="gap">{formatGap(c.gapMs)}</span> between the requests
        </p>
        <PairRequests pair={c} />
      </div>
    ),
  },
  { header: "Amount", cell: ({ row }) => formatMoney(row.original.amountCents, row.original.currency) },
  {
    header: "Paid",
    cell: ({ row: { original: c } }) => (
      <>
        <Time date={c.earlierRequestedAt} />
        <span className="muted block text-xs">and again {formatGap(c.gapMs)} later</span>
      </>
    ),
  },
  { header: "Refund", cell: ({ row }) => <RefundState c={row.original} /> },
  {
    header: "Left to give back",
    cell: ({ row: { original: c } }) => (
      <span data-testid="case-left">{formatMoney(c.status.leftCents, c.currency)}</span>
    ),
  },
  {
    header: "Action",
    cell: ({ row: { original: c } }) =>
      c.status.resolved ? (
        <span className="muted text-sm">done</span>
      ) : (
        <RefundDialog chargeId={c.id} label="Refund the second charge…" />
      ),
  },
];

function Histogram({ buckets }: { buckets: Result["histogram"] }) {
  const most = Math.max(1, ...buckets.map((b) => b.pairs));
  const label = (b: Result["histogram"][number]) => `${b.fromSeconds}–${b.toSeconds} s`;
  return (
    <figure className="card m-0" data-testid="gap-histogram">
      <figcaption className="mb-2 font-semibold">Seconds between the two requests of each case</figcaption>
      {buckets.length === 0 ? (
        <p className="muted m-0">No case in this range.</p>
      ) : (
        <ul className="m-0 list-none space-y-1 p-0">
          {buckets.map((b) => (
            <li
              key={b.fromSeconds}
              className="grid grid-cols-[5.5rem_minmax(0,1fr)_2.5rem] items-center gap-2 text-xs"
              data-testid="histogram-bucket"
              data-from={b.fromSeconds}
            >
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

/** "75.00 USD, 10.00 EUR" (nothing: "nothing"). */
const sums = (totals: Result["totals"], of: "leftCents" | "extraCents") =>
  totals.map((t) => formatMoney(t[of], t.currency)).join(", ") || "nothing";

export function Incident() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [params, setParams] = useQueryStates({
    hours: parseAsInteger,
    since: parseAsIsoDateTime,
    until: parseAsIsoDateTime,
  });
  const input =
    params.since && params.until && params.hours === null
      ? { since: params.since, until: params.until }
      : { hours: Math.min(MAX_HOURS, Math.max(1, params.hours ?? DEFAULT_HOURS)) };
  const [hours, setHours] = useState(String("hours" in input ? input.hours : DEFAULT_HOURS));
  const query = useQuery(trpc.customers.incident.queryOptions(input, { refetchInterval: 30_000 }));
  const [exporting, setExporting] = useState<string | null>(null);

  async function exportCsv() {
    setExporting("Preparing the CSV…");
    try {
      const { csv } = await queryClient.fetchQuery(trpc.customers.incidentCsv.queryOptions(input));
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([csv], { type: "text/csv;charset=utf-8" }));
      const range = query.data ? `${query.data.since.toISOString()}-${query.data.until.toISOString()}` : "range";
      link.download = `incident-${range}.csv`.replace(/:/g, "");
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
        A work list of the likely double charges the sweeper found (two identical requests, the second sent before the
        client had the first&apos;s answer), by when the customer paid. Each case is two charges: refunding one of them
        gives back what was paid twice, and the case is done for everyone. Purchases are left out (see{" "}
        <Link href="/admin/duplicates">Duplicates</Link> for every pair).
      </PageHeader>
      <section aria-label="Range" className="card flex flex-wrap items-end gap-3">
        <form
          className="flex items-end gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            const n = Number(hours);
            if (Number.isInteger(n) && n >= 1 && n <= MAX_HOURS) void setParams({ hours: n, since: null, until: null });
          }}
        >
          <label className="field">
            Last hours
            <input
              className="input w-24"
              type="number"
              min={1}
              max={MAX_HOURS}
              value={hours}
              onChange={(e) => setHours(e.target.value)}
            />
          </label>
          <button type="submit" className="btn-secondary">
            Show the last {hours || "N"} hours
          </button>
        </form>
        <DateRange
          since={"since" in input ? (input.since ?? null) : null}
          until={"until" in input ? (input.until ?? null) : null}
          onChange={(r) => void setParams({ ...r, hours: null })}
          what="Paid"
        />
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
              {r.cases.length} cases ({r.customers} customers), {r.resolved} done;{" "}
              <span data-testid="money-left">{sums(r.totals, "leftCents")}</span> left to give back of{" "}
              {sums(r.totals, "extraCents")} charged twice
              {r.truncated ? " (the first 2 000 cases only: narrow the range)" : ""}.{" "}
              <span className="muted text-sm">
                Paid between <Time date={r.since} showRelative={false} /> and{" "}
                <Time date={r.until} showRelative={false} />. Charges checked up to:{" "}
                {r.scannedUntil ? <Time date={r.scannedUntil} /> : "not yet"}
              </span>
            </p>
            <Histogram buckets={r.histogram} />
            {r.cases.length === 0 ? (
              <p className="card muted" data-testid="empty-state">
                No customer was charged twice with evidence in this range.
              </p>
            ) : (
              <DataTable
                caption="Likely double charges, newest first"
                columns={columns}
                data={r.cases}
                rowId={(c) => c.id}
                highlight={(c) => !c.status.resolved}
                testId="incident-pairs"
              />
            )}
          </>
        )}
      </QueryState>
    </>
  );
}
