"use client";

import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { parseAsInteger, parseAsIsoDateTime, parseAsString, parseAsStringLiteral, useQueryStates } from "nuqs";
import { useState } from "react";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { formatCount, formatMoney } from "../../_components/format";
import { PhaseBadge } from "../../_components/ui/Badge";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { LiveRegion } from "../../_components/ui/LiveRegion";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { DateRange } from "../../_components/ui/DateRange";
import { UrlProblems, useUrlProblems } from "../../_components/ui/UrlProblems";
import { userMessage } from "../../_components/errorMessage";
import { Time } from "../../_components/ui/Time";
import { SearchResults } from "./SearchResults";

const PHASES = [
  "in_progress",
  "held",
  "lease_expired",
  "released",
  "complete",
  "request",
  "reconciled",
  "abandoned",
] as const;
const STATUSES = ["201", "402", "500", "none"] as const;
/** Why the sweeper abandoned a record (src/server/requests/phaseDisplay.ts words them). */
const ABANDONED = { no_trace: "no trace at the gateway", refused: "the gateway refused it" } as const;
const HOUR = 3_600_000;
const noLanding = { q: "", matches: [] };

/** Every filter and the search live in the URL, so a link shows what its sender saw. */
const filterParams = {
  phase: parseAsStringLiteral(PHASES),
  status: parseAsStringLiteral(STATUSES),
  route: parseAsString,
  client: parseAsInteger,
  customer: parseAsString,
  abandoned: parseAsStringLiteral(["no_trace", "refused"] as const),
  since: parseAsIsoDateTime,
  until: parseAsIsoDateTime,
  q: parseAsString,
};

type Item = RouterOutputs["requests"]["list"]["items"][number];

const columns: ColumnDef<Item>[] = [
  {
    header: "Key",
    cell: ({ row: { original: r } }) => (
      <Link href={`/admin/requests/${r.id}`} className="font-mono text-[13px] break-all">
        {r.idempotencyKey ?? `keyless #${r.id}`}
      </Link>
    ),
  },
  { header: "State", cell: ({ row }) => <PhaseBadge phase={row.original.phase} /> },
  {
    header: "Abandoned because",
    cell: ({ row }) =>
      row.original.phase.because ? (
        <span data-testid="abandoned-because">{row.original.phase.because}</span>
      ) : (
        <span className="muted">—</span>
      ),
  },
  { header: "Status", cell: ({ row }) => row.original.responseStatus ?? <span className="muted">—</span> },
  { header: "Client", cell: ({ row }) => row.original.apiClient.name },
  {
    header: "Customer",
    cell: ({ row: { original: r } }) =>
      r.customerId ? (
        <Link href={`/admin/customers/${encodeURIComponent(r.customerId)}`}>{r.customerId}</Link>
      ) : (
        <span className="muted">—</span>
      ),
  },
  {
    header: "Charge",
    cell: ({ row: { original: r } }) =>
      r.charge ? (
        <Link href={`/admin/charges/${r.charge.id}`}>
          {formatMoney(r.charge.amountCents, r.charge.currency)} {r.charge.status === "failed" && "(declined)"}
        </Link>
      ) : (
        <span className="muted">none</span>
      ),
  },
  { header: "Attempt", cell: ({ row }) => row.original.attempt },
  { header: "Created", cell: ({ row }) => <Time date={row.original.createdAt} /> },
];

export function RequestLog() {
  const trpc = useTRPC();
  const [params, setParams] = useQueryStates(filterParams);
  // A filter the address names but that cannot be read, or an impossible range: said, and nothing listed.
  const problems = useUrlProblems(filterParams, { from: "since", until: "until" });
  const enabled = problems.length === 0 && !params.q;
  const options = useQuery(trpc.requests.filterOptions.queryOptions());
  const filters = {
    phase: params.phase ?? undefined,
    status: params.status ?? undefined,
    route: params.route ?? undefined,
    apiClientId: params.client ?? undefined,
    customerId: params.customer?.trim() || undefined,
    abandoned: params.abandoned ?? undefined,
    since: params.since ?? undefined,
    until: params.until ?? undefined,
  };
  const list = useInfiniteQuery(
    trpc.requests.list.infiniteQueryOptions(
      { ...filters, limit: 25 },
      {
        getNextPageParam: (p) => p.nextCursor,
        refetchInterval: 5_000,
        placeholderData: (prev) => prev,
        enabled,
      },
    ),
  );
  const count = useQuery(trpc.requests.count.queryOptions(filters, { refetchInterval: 10_000, enabled }));
  const queryClient = useQueryClient();
  const router = useRouter();
  const [landing, setLanding] = useState<{ q: string; matches: RouterOutputs["requests"]["resolve"] }>(noLanding);
  /** A whole key, charge, refund, request or customer id opens its page; anything else is searched as a prefix. */
  async function land(q: string) {
    setLanding(noLanding);
    if (!q) return void setParams({ q: null });
    const matches = await queryClient
      .fetchQuery(trpc.requests.resolve.queryOptions({ q: q.slice(0, 64) }))
      .catch(() => []);
    if (matches.length === 1) return router.push(matches[0]!.path);
    setLanding({ q, matches });
    void setParams({ q });
  }
  const items = list.data?.pages.flatMap((p) => p.items) ?? [];
  const phaseLabel = (p: (typeof PHASES)[number]) =>
    p === "in_progress" ? "All in progress" : p === "complete" ? "All complete" : (options.data?.phases[p]?.label ?? p);

  return (
    <>
      <PageHeader title="Request log">
        Every charge request, keyed and keyless, newest first. Filters and the search are part of the address, so a link
        shows what you see. States are the record lifecycle&apos;s.
      </PageHeader>

      {/* biome-ignore lint/a11y/useSemanticElements: <form role="search"> is the ARIA landmark pattern */}
      <form
        role="search"
        aria-label="Prefix search"
        className="card flex flex-wrap items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          void land(String(new FormData(e.currentTarget).get("q") ?? "").trim());
        }}
      >
        {/* The whole width on a phone, whatever else the row holds (the "Clear search" button after a search). */}
        <label className="field min-w-0 basis-full sm:basis-0 sm:flex-1">
          Search by an idempotency key, charge id, refund id, request id (req_…) or customer id, or its start
          {/* Uncontrolled, read when the form is sent: what someone typed before the page came alive stays. */}
          <input
            name="q"
            className="input"
            defaultValue={params.q ?? ""}
            key={params.q ?? ""}
            placeholder="e.g. 8e03 or ch_4f or cus_12"
          />
        </label>
        <button type="submit" className="btn">
          Search
        </button>
        {params.q && (
          <button
            type="button"
            className="btn-secondary"
            onClick={() => {
              setLanding(noLanding);
              void setParams({ q: null });
            }}
          >
            Clear search
          </button>
        )}
      </form>
      {landing.matches.length > 1 && (
        <p role="status" className="card" data-testid="search-choices">
          “{landing.q}” names several records:{" "}
          {landing.matches.map((m) => (
            <Link key={m.kind} href={m.path} className="mr-3">
              the {m.kind} {m.id}
            </Link>
          ))}
        </p>
      )}
      {params.q && <SearchResults prefix={params.q} requestColumns={columns} />}

      {/* While a search is shown, its matches are the list; the log and its filters come back with "Clear search". */}
      {!params.q && <SweepLine />}

      {!params.q && (
        <>
          <section aria-label="Filters" className="card grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-4">
            <label className="field">
              State
              <select
                className="input"
                value={params.phase ?? ""}
                onChange={(e) => void setParams({ phase: (e.target.value || null) as never })}
              >
                <option value="">any</option>
                {PHASES.map((p) => (
                  <option key={p} value={p}>
                    {phaseLabel(p)}
                  </option>
                ))}
              </select>
            </label>
            <label className="field">
              Stored status
              <select
                className="input"
                value={params.status ?? ""}
                onChange={(e) => void setParams({ status: (e.target.value || null) as never })}
              >
                <option value="">any</option>
                {STATUSES.map((s) => (
                  <option key={s} value={s}>
                    {s === "none" ? "none yet (in progress)" : s}
                  </option>
                ))}
              </select>
            </label>
            <label className="field">
              Abandoned because
              <select
                className="input"
                value={params.abandoned ?? ""}
                onChange={(e) => void setParams({ abandoned: (e.target.value || null) as never })}
              >
                <option value="">any</option>
                {Object.entries(ABANDONED).map(([value, words]) => (
                  <option key={value} value={value}>
                    {words}
                  </option>
                ))}
              </select>
            </label>
            <label className="field">
              Route
              <select
                className="input"
                value={params.route ?? ""}
                onChange={(e) => void setParams({ route: e.target.value || null })}
              >
                <option value="">any</option>
                {options.data?.routes.map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
            </label>
            <label className="field">
              API client
              <select
                className="input"
                value={params.client ?? ""}
                onChange={(e) => void setParams({ client: e.target.value ? Number(e.target.value) : null })}
              >
                <option value="">any</option>
                {options.data?.clients.map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name}
                  </option>
                ))}
              </select>
            </label>
            <label className="field">
              Customer id
              <input
                className="input"
                defaultValue={params.customer ?? ""}
                key={params.customer ?? ""}
                onBlur={(e) => void setParams({ customer: e.target.value.trim() || null })}
                onKeyDown={(e) =>
                  e.key === "Enter" && void setParams({ customer: e.currentTarget.value.trim() || null })
                }
              />
            </label>
            <div className="sm:col-span-2">
              <DateRange since={params.since} until={params.until} onChange={(r) => void setParams(r)} />
            </div>
            <div className="flex flex-wrap items-end gap-2">
              {[1, 24, 168].map((h) => (
                <button
                  key={h}
                  type="button"
                  className="btn-secondary"
                  onClick={() => void setParams({ since: new Date(Date.now() - h * HOUR), until: null })}
                >
                  Last {h === 168 ? "7 days" : `${h} h`}
                </button>
              ))}
              <button
                type="button"
                className="btn-secondary"
                onClick={() =>
                  void setParams({
                    phase: null,
                    status: null,
                    route: null,
                    client: null,
                    customer: null,
                    abandoned: null,
                    since: null,
                    until: null,
                  })
                }
              >
                Reset filters
              </button>
            </div>
          </section>

          <UrlProblems problems={problems} parsers={filterParams} withheld />
          {enabled && (
            <>
              <div className="flex flex-wrap items-baseline justify-between gap-2">
                <p className="m-0 font-medium" data-testid="request-count">
                  {count.data
                    ? `${formatCount(count.data)} matching requests`
                    : count.data === null
                      ? "Too many rows to count for this combination of filters; the list below is complete."
                      : count.error
                        ? "Count unavailable"
                        : "Counting…"}
                </p>
                <LiveRegion updatedAt={list.dataUpdatedAt} summary={`${items.length} requests shown.`} />
              </div>
              <QueryState
                query={list}
                what="the request log"
                isEmpty={() => items.length === 0}
                empty="No request matches these filters."
              >
                {() => (
                  <>
                    <DataTable
                      caption="Requests, newest first"
                      columns={columns}
                      data={items}
                      rowId={(r) => r.id}
                      testId="request-log"
                    />
                    <LoadMore query={list} />
                  </>
                )}
              </QueryState>
            </>
          )}
        </>
      )}
    </>
  );
}

function SweepLine() {
  const trpc = useTRPC();
  const sweep = useQuery(trpc.sweep.status.queryOptions(undefined, { refetchInterval: 15_000 }));
  const run = sweep.data?.lastRun;
  return (
    <p className="text-sm muted" data-testid="sweep-status">
      {sweep.isPending ? (
        "Loading the sweeper's status…"
      ) : sweep.error ? (
        `Sweeper status unavailable: ${userMessage(sweep.error)}`
      ) : run ? (
        <>
          Sweeper: last run <Time date={run.startedAt} /> on {run.instance}: reaped {run.reaped}, reconciled{" "}
          {run.reconciled}, pruned {run.pruned}
          {run.error && <span className="bad"> — failed: {run.error}</span>}. About{" "}
          {sweep.data!.approximateRecords.toLocaleString("en")} records.
        </>
      ) : (
        "Sweeper: never ran."
      )}
    </p>
  );
}
