"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "~/trpc/react";
import { formatMoney } from "../../_components/format";
import { PhaseBadge } from "../../_components/ui/Badge";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";

/** What starts with the prefix: keys, charge ids, customers; each a link to its page. */
export function SearchResults({ prefix }: { prefix: string }) {
  const trpc = useTRPC();
  const query = useQuery(trpc.requests.search.queryOptions({ prefix }));
  return (
    <section aria-label="Search results" className="card" data-testid="search-results">
      <h2 className="mb-2">Starting with “{prefix}”</h2>
      <QueryState
        query={query}
        what="the search"
        isEmpty={(d) => d.requests.length + d.charges.length + d.customers.length === 0}
        empty={`No key, charge or customer starts with “${prefix}”.`}
      >
        {(d) => (
          <div className="grid gap-4 md:grid-cols-3">
            <div>
              <h3 className="text-sm">Idempotency keys</h3>
              {d.requests.length === 0 ? (
                <p className="muted text-sm">none</p>
              ) : (
                <ul className="space-y-1 text-sm">
                  {d.requests.map((r) => (
                    <li key={r.id} className="flex flex-wrap items-center gap-2">
                      <Link href={`/admin/requests/${r.id}`} className="font-mono break-all">
                        {r.idempotencyKey}
                      </Link>
                      <PhaseBadge phase={r.phase} /> <span className="muted">{r.apiClient.name}</span>
                    </li>
                  ))}
                </ul>
              )}
              {d.more.requests && <p className="muted text-xs">More match: type more of the key.</p>}
            </div>
            <div>
              <h3 className="text-sm">Charges</h3>
              {d.charges.length === 0 ? (
                <p className="muted text-sm">none</p>
              ) : (
                <ul className="space-y-1 text-sm">
                  {d.charges.map((c) => (
                    <li key={c.id}>
                      <Link href={`/admin/charges/${c.id}`} className="font-mono">
                        {c.id}
                      </Link>{" "}
                      {formatMoney(c.amountCents, c.currency)} <Time date={c.createdAt} />
                    </li>
                  ))}
                </ul>
              )}
              {d.more.charges && <p className="muted text-xs">More match: type more of the id.</p>}
            </div>
            <div>
              <h3 className="text-sm">Customers</h3>
              {d.customers.length === 0 ? (
                <p className="muted text-sm">none</p>
              ) : (
                <ul className="space-y-1 text-sm">
                  {d.customers.map((c) => (
                    <li key={c}>
                      <Link href={`/admin/customers/${encodeURIComponent(c)}`}>{c}</Link>
                    </li>
                  ))}
                </ul>
              )}
              {d.more.customers && <p className="muted text-xs">More match: type more of the id.</p>}
            </div>
          </div>
        )}
      </QueryState>
    </section>
  );
}
