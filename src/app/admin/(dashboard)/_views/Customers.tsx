"use client";

import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { parseAsInteger, parseAsIsoDateTime, useQueryStates } from "nuqs";
import { useState } from "react";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { ChargeRefunds } from "./Refunds";
import { formatCount, formatGap, formatMoney } from "../../_components/format";
import { Badge, PhaseBadge } from "../../_components/ui/Badge";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { LiveRegion } from "../../_components/ui/LiveRegion";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { MismatchWarning } from "../../_components/MismatchWarning";
import { DateRange } from "../../_components/ui/DateRange";
import { Time } from "../../_components/ui/Time";
import { EventsOf } from "./EventsOf";
import { EvidenceBadge } from "./PairEvidence";

/** Finding a customer: by id or its start. */
export function CustomerSearch() {
  const router = useRouter();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [input, setInput] = useState("");
  const [prefix, setPrefix] = useState("");
  const matches = useQuery({
    ...trpc.requests.search.queryOptions({ prefix: prefix || "x" }),
    enabled: prefix.length > 0,
  });
  return (
    <>
      <PageHeader title="Customers">
        Every charge of a customer, keyed and keyless, with possible duplicates highlighted.
      </PageHeader>
      {/* biome-ignore lint/a11y/useSemanticElements: <form role="search"> is the ARIA landmark pattern */}
      <form
        role="search"
        aria-label="Find a customer"
        className="card flex flex-wrap items-end gap-2"
        onSubmit={async (e) => {
          e.preventDefault();
          const id = input.trim();
          if (!id) return;
          // A pasted charge id or key opens its record; anything else is taken as a customer id.
          const matches = await queryClient.fetchQuery(trpc.requests.resolve.queryOptions({ q: id.slice(0, 64) }));
          const target = matches.find((m) => m.kind === "customer") ?? (matches.length === 1 ? matches[0] : null);
          router.push(target?.path ?? `/admin/customers/${encodeURIComponent(id)}`);
        }}
      >
        <label className="field min-w-0 flex-1">
          Customer id (or its start, to list matches)
          <input
            className="input"
            value={input}
            onChange={(e) => {
              setInput(e.target.value);
              setPrefix(e.target.value.trim());
            }}
          />
        </label>
        <button type="submit" className="btn">
          Show charges
        </button>
      </form>
      {prefix && (
        <section className="card" aria-label="Matching customers">
          <QueryState
            query={matches}
            what="matching customers"
            isEmpty={(d) => d.customers.length === 0}
            empty="No customer id starts with that."
          >
            {(d) => (
              <ul className="space-y-1">
                {d.customers.map((c) => (
                  <li key={c}>
                    <Link href={`/admin/customers/${encodeURIComponent(c)}`}>{c}</Link>
                  </li>
                ))}
              </ul>
            )}
          </QueryState>
        </section>
      )}
    </>
  );
}

type Charge = RouterOutputs["customers"]["charges"]["charges"][number];

/** A settlement this much after the request is said (the sweeper finished it, or a retry did). */
const LATE_SETTLEMENT_MS = 2_000;

/** When the customer paid (the request arrived), and when the charge was settled if that was notably later. */
function PaidAt({ requestedAt, settledAt }: { requestedAt: Date; settledAt: Date }) {
  const late = settledAt.getTime() - requestedAt.getTime();
  return (
    <>
      <Time date={requestedAt} />
      {late > LATE_SETTLEMENT_MS && <span className="muted block text-xs">settled {formatGap(late)} later</span>}
    </>
  );
}

const chargeColumns: ColumnDef<Charge>[] = [
  { header: "Paid", cell: ({ row }) => <PaidAt {...row.original} /> },
  { header: "Amount", cell: ({ row }) => formatMoney(row.original.amountCents, row.original.currency) },
  {
    header: "Status",
    cell: ({ row: { original: c } }) => (
      <>
        <Badge tone={c.status === "succeeded" ? "ok" : "danger"}>
          {c.status === "succeeded" ? "succeeded" : `declined${c.failureCode ? ` (${c.failureCode})` : ""}`}
        </Badge>{" "}
        {c.amountRefundedCents > 0 && (
          <Badge tone="neutral">
            {c.amountRefundedCents === c.amountCents
              ? "refunded"
              : `${formatMoney(c.amountRefundedCents, c.currency)} refunded`}
          </Badge>
        )}
      </>
    ),
  },
  {
    header: "Charge",
    cell: ({ row }) => (
      <Link href={`/admin/charges/${row.original.id}`} className="font-mono text-[13px]">
        {row.original.id}
      </Link>
    ),
  },
  {
    header: "Idempotency key",
    cell: ({ row: { original: c } }) =>
      c.request ? (
        <Link href={`/admin/requests/${c.request.id}`} className="font-mono text-[13px] break-all">
          {c.request.idempotencyKey ?? "keyless"}
        </Link>
      ) : (
        <span className="muted">record expired</span>
      ),
  },
  { header: "Client", cell: ({ row }) => row.original.apiClient.name },
  {
    header: "Same amount within the window",
    cell: ({ row: { original: c } }) => {
      const twin = c.possibleDuplicateOf;
      if (!twin) return <span className="muted">—</span>;
      return (
        <span
          className={twin.evidence.likely ? "warn font-medium" : undefined}
          data-testid={twin.evidence.likely ? "duplicate-flag" : "same-amount"}
        >
          <EvidenceBadge evidence={twin.evidence} /> {formatGap(Math.abs(twin.gapMs))}{" "}
          {twin.gapMs > 0 ? "after" : "before"} <Link href={`/admin/charges/${twin.id}`}>{twin.id.slice(0, 10)}…</Link>
        </span>
      );
    },
  },
];

export const WINDOWS = [1, 5, 10, 30, 60];

export function CustomerView({ customerId }: { customerId: string }) {
  const trpc = useTRPC();
  const [params, setParams] = useQueryStates({
    window: parseAsInteger.withDefault(10),
    since: parseAsIsoDateTime,
    until: parseAsIsoDateTime,
  });
  const windowMinutes = params.window;
  const list = useInfiniteQuery(
    trpc.customers.charges.infiniteQueryOptions(
      {
        customerId,
        windowMinutes,
        since: params.since ?? undefined,
        until: params.until ?? undefined,
        limit: 50,
      },
      { getNextPageParam: (p) => p.nextCursor, refetchInterval: 10_000 },
    ),
  );
  const charges = list.data?.pages.flatMap((p) => p.charges) ?? [];
  const duplicates = charges.filter((c) => c.possibleDuplicateOf?.evidence.likely).length;
  const total = list.data?.pages[0]?.total;
  return (
    <>
      <PageHeader
        title={
          <>
            Customer <code className="break-all">{customerId}</code>
          </>
        }
      >
        Every charge of this customer, newest first by when the customer paid (its request arrived). A charge is
        highlighted when another succeeded charge of the same client, amount and currency came within the window and the
        two requests show a retry: identical, the second sent before the client had the first&apos;s answer. Different
        requests are two purchases; an identical one sent after the first was answered is a repeat purchase. Neither is
        highlighted.
      </PageHeader>
      <UrlCheck parsers={{ window: parseAsInteger }} />
      <div className="flex flex-wrap items-end justify-between gap-3">
        <DateRange since={params.since} until={params.until} onChange={(r) => void setParams(r)} what="Charged" />
        <label className="field">
          Duplicate window
          <select
            className="input"
            value={windowMinutes}
            onChange={(e) => void setParams({ window: Number(e.target.value) })}
          >
            {WINDOWS.map((m) => (
              <option key={m} value={m}>
                {m} minutes
              </option>
            ))}
          </select>
        </label>
        <p className="m-0" data-testid="customer-summary">
          {total ? `${formatCount(total)} charges` : ""}
          {duplicates > 0 && <strong className="warn"> · {duplicates} likely double charges shown</strong>}
        </p>
      </div>
      <LiveRegion updatedAt={list.dataUpdatedAt} summary={`${charges.length} charges shown.`} />
      <QueryState
        query={list}
        what="the customer's charges"
        isEmpty={() => charges.length === 0}
        empty="No charge for this customer id."
      >
        {() => (
          <>
            <DataTable
              caption={`Charges of ${customerId}, newest first`}
              columns={chargeColumns}
              data={charges}
              rowId={(c) => c.id}
              highlight={(c) => c.possibleDuplicateOf?.evidence.likely === true}
              testId="customer-charges"
            />
            <LoadMore query={list} />
          </>
        )}
      </QueryState>
    </>
  );
}

export function ChargeDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const query = useQuery(trpc.customers.charge.queryOptions({ id, windowMinutes: 10 }));
  return (
    <QueryState query={query} what={`charge ${id}`}>
      {(c) => (
        <>
          <PageHeader
            title={
              <>
                Charge <code className="break-all">{c.id}</code>
              </>
            }
          >
            {c.request
              ? "Its request record is linked below."
              : "Its request record has expired and was pruned; the charge stays."}
          </PageHeader>
          <MismatchWarning mismatches={c.openMismatches} />
          {c.possibleDuplicateOf?.evidence.likely && (
            <p role="status" className="card warn" data-testid="duplicate-warning">
              {c.possibleDuplicateOf.evidence.label}:{" "}
              <Link href={`/admin/charges/${c.possibleDuplicateOf.id}`}>{c.possibleDuplicateOf.id}</Link> charged the
              same customer the same amount, the two requests {formatGap(Math.abs(c.possibleDuplicateOf.gapMs))} apart (
              <Time date={c.possibleDuplicateOf.requestedAt} />
              ). {c.possibleDuplicateOf.evidence.description}
            </p>
          )}
          <dl className="card facts" data-testid="charge-detail">
            <dt>Amount</dt>
            <dd>{formatMoney(c.amountCents, c.currency)}</dd>
            <dt>Status</dt>
            <dd>
              {c.status}
              {c.failureCode && ` (${c.failureCode})`}
            </dd>
            <dt>Paid (request arrived)</dt>
            <dd>
              <Time date={c.requestedAt} precision="ms" />
            </dd>
            <dt>Settled</dt>
            <dd>
              <Time date={c.settledAt} precision="ms" />
            </dd>
            <dt>Customer</dt>
            <dd>
              {c.customerId ? (
                <Link href={`/admin/customers/${encodeURIComponent(c.customerId)}`}>{c.customerId}</Link>
              ) : (
                "none given"
              )}
            </dd>
            <dt>API client</dt>
            <dd>{c.apiClient.name}</dd>
            <dt>Request</dt>
            <dd>
              {c.request ? (
                <span className="flex flex-wrap items-center gap-2">
                  <Link href={`/admin/requests/${c.request.id}`}>
                    {c.request.idempotencyKey ?? `keyless request #${c.request.id}`}
                  </Link>
                  <PhaseBadge phase={c.request.phase} />
                </span>
              ) : (
                <span className="muted">expired</span>
              )}
            </dd>
            <dt>Gateway charge</dt>
            <dd>
              <code>{c.gatewayChargeId}</code>
            </dd>
            <dt>Gateway key</dt>
            <dd>
              <code className="break-all">{c.gatewayIdempotencyKey}</code>
            </dd>
          </dl>
          <ChargeRefunds chargeId={c.id} />
          <EventsOf chargeId={c.id} />
        </>
      )}
    </QueryState>
  );
}
