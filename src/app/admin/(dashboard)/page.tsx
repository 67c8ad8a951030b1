"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "~/trpc/react";
import { formatAge, formatBytes, formatMoney, formatTime } from "../_components/format";
import { AbandonedList, FilterBar, InFlightList, KeyReuseList, useFilters } from "../_components/RequestLists";

function Search() {
  const trpc = useTRPC();
  const [input, setInput] = useState("");
  const [query, setQuery] = useState("");
  const result = useQuery({ ...trpc.requests.search.queryOptions({ query }), enabled: query.length > 0 });
  return (
    <section className="card">
      <form onSubmit={(e) => (e.preventDefault(), setQuery(input.trim()))} className="search">
        <input
          aria-label="Search"
          placeholder="Idempotency key, charge id (ch_…) or customer id"
          value={input}
          onChange={(e) => setInput(e.target.value)}
        />
        <button type="submit">Find</button>
      </form>
      {result.data && (
        <div data-testid="search-results">
          {result.data.requests.length === 0 && result.data.charges.length === 0 && <p className="muted">Nothing found for “{query}”.</p>}
          {result.data.requests.length > 0 && (
            <table>
              <thead><tr><th>Key</th><th>Route</th><th>Client</th><th>State</th><th>Status</th><th>Created</th></tr></thead>
              <tbody>
                {result.data.requests.map((r) => (
                  <tr key={String(r.id)}>
                    <td><Link href={`/admin/requests/${r.id}`}>{r.idempotencyKey ?? "(keyless)"}</Link></td>
                    <td>{r.route}</td>
                    <td>{r.apiClient.name}</td>
                    <td title={r.phase.description}>{r.phase.label}</td>
                    <td>{r.responseStatus ?? "—"}</td>
                    <td>{formatTime(r.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {result.data.charges.length > 0 && (
            <table>
              <thead><tr><th>Charge</th><th>Amount</th><th>Status</th><th>Customer</th><th>Client</th><th>Request</th></tr></thead>
              <tbody>
                {result.data.charges.map((c) => (
                  <tr key={c.id}>
                    <td><code>{c.id}</code></td>
                    <td>{formatMoney(c.amountCents, c.currency)}</td>
                    <td>{c.status}</td>
                    <td>{c.customerId ?? "—"}</td>
                    <td>{c.apiClient.name}</td>
                    <td>{c.idempotentRequestId ? <Link href={`/admin/requests/${c.idempotentRequestId}`}>record</Link> : "expired"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </section>
  );
}

function SweepStatus() {
  const trpc = useTRPC();
  const { data } = useQuery(trpc.sweep.status.queryOptions(undefined, { refetchInterval: 10_000 }));
  if (!data) return null;
  const run = data.lastRun;
  return (
    <section className="card" data-testid="sweep-status">
      <h2>Sweeper</h2>
      <p>
        Last run: {run ? `${formatTime(run.startedAt)} on ${run.instance}` : "never"}
        {run && ` — reaped ${run.reaped}, reconciled ${run.reconciled}, pruned ${run.pruned}`}
        {run?.error && <span className="bad"> — failed: {run.error}</span>}
      </p>
      <p className="muted">
        {data.records} records ({data.inProgress} in progress), table {formatBytes(data.tableBytes)}; runs every {formatAge(data.intervalMs)},
        reaps after {formatAge(data.reapAfterMs)}.
      </p>
    </section>
  );
}

export default function RequestsPage() {
  const [filters, setFilters] = useFilters();
  return (
    <>
      <h1>Requests</h1>
      <Search />
      <SweepStatus />
      <FilterBar value={filters} onChange={setFilters} />
      <InFlightList filters={filters} />
      <AbandonedList filters={filters} />
      <KeyReuseList filters={filters} />
    </>
  );
}
