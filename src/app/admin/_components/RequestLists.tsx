"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "~/trpc/react";
import { formatAge, formatTime } from "./format";

export type Filters = { route?: string; apiClientId?: number; since?: Date };

export function FilterBar({ value, onChange }: { value: Filters; onChange: (f: Filters) => void }) {
  const trpc = useTRPC();
  const options = useQuery(trpc.requests.filterOptions.queryOptions());
  return (
    <div className="filters">
      <label>
        Route{" "}
        <select value={value.route ?? ""} onChange={(e) => onChange({ ...value, route: e.target.value || undefined })}>
          <option value="">all</option>
          {options.data?.routes.map((r) => <option key={r}>{r}</option>)}
        </select>
      </label>
      <label>
        API client{" "}
        <select
          aria-label="API client"
          value={value.apiClientId ?? ""}
          onChange={(e) => onChange({ ...value, apiClientId: e.target.value ? Number(e.target.value) : undefined })}
        >
          <option value="">all</option>
          {options.data?.clients.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name} (#{c.id})
            </option>
          ))}
        </select>
      </label>
      <label>
        Since{" "}
        <select
          onChange={(e) => onChange({ ...value, since: e.target.value ? new Date(Date.now() - Number(e.target.value) * 3_600_000) : undefined })}
        >
          <option value="">any time</option>
          <option value="1">last hour</option>
          <option value="24">last 24 h</option>
          <option value="168">last 7 days</option>
        </select>
      </label>
    </div>
  );
}

function LoadMore({ query }: { query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown } }) {
  if (!query.hasNextPage) return null;
  return (
    <button onClick={() => query.fetchNextPage()} disabled={query.isFetchingNextPage}>
      Load more
    </button>
  );
}

export function InFlightList({ filters }: { filters: Filters }) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(
    trpc.requests.inFlight.infiniteQueryOptions({ ...filters, limit: 25 }, { getNextPageParam: (p) => p.nextCursor, refetchInterval: 5_000 }),
  );
  const pages = query.data?.pages ?? [];
  const rows = pages.flatMap((p) => p.items.map((item) => ({ item, now: p.now, reapAfterMs: p.reapAfterMs })));
  return (
    <section data-testid="in-flight">
      <h2>In flight</h2>
      {rows.length === 0 ? (
        <p className="muted">Nothing in progress.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Key</th><th>Route</th><th>Client</th><th>Age</th><th>Claim</th></tr>
          </thead>
          <tbody>
            {rows.map(({ item, now, reapAfterMs }) => {
              const age = now.getTime() - item.createdAt.getTime();
              const idle = now.getTime() - item.updatedAt.getTime();
              const nearReap = idle > reapAfterMs * 0.8;
              return (
                <tr key={String(item.id)} className={nearReap ? "warn" : undefined} data-near-reap={nearReap || undefined}>
                  <td><Link href={`/admin/requests/${item.id}`}>{item.idempotencyKey ?? "(keyless)"}</Link></td>
                  <td>{item.route}</td>
                  <td>{item.apiClient.name}</td>
                  <td title={`reaped after ${formatAge(reapAfterMs)} idle`}>{formatAge(age)}{nearReap && " — close to reap"}</td>
                  <td title={item.phase.description}>{item.phase.label}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <LoadMore query={query} />
    </section>
  );
}

export function AbandonedList({ filters }: { filters: Filters }) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(trpc.requests.abandoned.infiniteQueryOptions({ ...filters, limit: 25 }, { getNextPageParam: (p) => p.nextCursor }));
  const rows = query.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section data-testid="abandoned">
      <h2>Finished by the sweeper</h2>
      {rows.length === 0 ? (
        <p className="muted">No abandoned or reconciled requests.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Key</th><th>Client</th><th>Outcome</th><th>Status</th><th>Finished</th></tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={String(r.id)}>
                <td><Link href={`/admin/requests/${r.id}`}>{r.idempotencyKey ?? "(keyless)"}</Link></td>
                <td>{r.apiClient.name}</td>
                <td title={r.phase.description}>{r.phase.label}</td>
                <td>{r.responseStatus}</td>
                <td>{formatTime(r.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore query={query} />
    </section>
  );
}

export function KeyReuseList({ filters }: { filters: Filters }) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(trpc.requests.keyReuses.infiniteQueryOptions({ ...filters, limit: 25 }, { getNextPageParam: (p) => p.nextCursor }));
  const rows = query.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section data-testid="key-reuses">
      <h2>Key reused with another payload</h2>
      {rows.length === 0 ? (
        <p className="muted">No reused keys.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Key</th><th>Client</th><th>Time</th><th>Stored hash</th><th>Attempted hash</th></tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={String(r.id)}>
                <td>{r.idempotencyKey}</td>
                <td>
                  {r.apiClient?.name}
                  {r.apiClientId !== r.ownerApiClientId && <span className="bad"> (key owned by {r.ownerApiClient?.name})</span>}
                </td>
                <td>{formatTime(r.createdAt)}</td>
                <td><code title={r.storedHash}>{r.storedHash.slice(0, 12)}…</code></td>
                <td><code title={r.attemptedHash}>{r.attemptedHash.slice(0, 12)}…</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore query={query} />
    </section>
  );
}

export function useFilters() {
  return useState<Filters>({});
}
