"use client";

import { useQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { formatMoney } from "../../_components/format";
import { DataTable } from "../../_components/ui/DataTable";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";

type Request = RouterOutputs["requests"]["search"]["requests"][number];

/**
 * What starts with the prefix, in place of the log below the search box: the requests whose key starts with it
 * (with the log's columns), and the charges and customers whose ids do, each a link to its page.
 */
export function SearchResults({ prefix, requestColumns }: { prefix: string; requestColumns: ColumnDef<Request>[] }) {
  const trpc = useTRPC();
  const query = useQuery(trpc.requests.search.queryOptions({ prefix }));
  return (
    <section aria-label="Search results" className="space-y-3" data-testid="search-results">
      <h2 className="m-0">Starting with “{prefix}”</h2>
      <QueryState
        query={query}
        what="the search"
        isEmpty={(d) => d.requests.length + d.charges.length + d.customers.length === 0}
        empty={`No key, charge or customer starts with “${prefix}”.`}
      >
        {(d) => (
          <>
            <div className="card grid gap-4 md:grid-cols-2">
              <div>
                <h3 className="text-sm">Charges</h3>
                {d.charges.length === 0 ? (
                  <p className="muted text-sm">none</p>
                ) : (
                  <ul className="space-y-1 text-sm">
                    {d.charges.map((c) => (
                      <li key={c.id}>
                        <Link href={`/admin/charges/${c.id}`} className="font-mono break-all">
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
                        <Link href={`/admin/customers/${encodeURIComponent(c)}`} className="break-all">
                          {c}
                        </Link>
                      </li>
                    ))}
                  </ul>
                )}
                {d.more.customers && <p className="muted text-xs">More match: type more of the id.</p>}
              </div>
            </div>
            <p className="m-0 font-medium" data-testid="request-count">
              {d.requests.length}
              {d.more.requests ? "+" : ""} requests whose key starts with “{prefix}”
              {d.more.requests ? " (the first ones in key order: type more of the key)" : ""}
            </p>
            {d.requests.length > 0 && (
              <DataTable
                caption={`Requests whose key starts with “${prefix}”`}
                columns={requestColumns}
                data={d.requests}
                rowId={(r) => r.id}
                testId="request-log"
              />
            )}
          </>
        )}
      </QueryState>
    </section>
  );
}
