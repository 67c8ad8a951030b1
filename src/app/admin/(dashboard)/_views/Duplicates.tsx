"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { parseAsInteger, useQueryState } from "nuqs";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { formatAge, formatMoney } from "../../_components/format";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { LiveRegion } from "../../_components/ui/LiveRegion";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { WINDOWS } from "./Customers";

type Item = RouterOutputs["customers"]["duplicates"]["items"][number];

const columns: ColumnDef<Item>[] = [
  { header: "When", cell: ({ row }) => <Time date={row.original.createdAt} /> },
  {
    header: "Customer",
    cell: ({ row }) => (
      <Link href={`/admin/customers/${encodeURIComponent(row.original.customerId)}`}>{row.original.customerId}</Link>
    ),
  },
  { header: "Amount", cell: ({ row }) => formatMoney(row.original.amountCents, row.original.currency) },
  { header: "Client", cell: ({ row }) => row.original.apiClient?.name ?? `client ${row.original.apiClientId}` },
  {
    header: "Charge",
    cell: ({ row }) => (
      <Link href={`/admin/charges/${row.original.id}`} className="font-mono text-[13px]">
        {row.original.id}
      </Link>
    ),
  },
  {
    header: "Same as",
    cell: ({ row }) => (
      <Link href={`/admin/charges/${row.original.earlierId}`} className="font-mono text-[13px]">
        {row.original.earlierId}
      </Link>
    ),
  },
  { header: "Apart", cell: ({ row }) => formatAge(row.original.gapMs) },
];

export function Duplicates() {
  const trpc = useTRPC();
  const [windowMinutes, setWindow] = useQueryState("window", parseAsInteger.withDefault(10));
  const list = useInfiniteQuery(
    trpc.customers.duplicates.infiniteQueryOptions(
      { windowMinutes, limit: 25 },
      { getNextPageParam: (p) => p.nextCursor, refetchInterval: 10_000 },
    ),
  );
  const items = list.data?.pages.flatMap((p) => p.items) ?? [];
  const scannedUntil = list.data?.pages[0]?.scannedUntil;
  return (
    <>
      <PageHeader title="Possible duplicate charges">
        Succeeded charges of the same client, customer, amount and currency closer together than the window, across all
        customers, newest first: the signature of a retry that charged twice. Found by the sweeper after each sweep.
      </PageHeader>
      <UrlCheck parsers={{ window: parseAsInteger }} />
      <div className="flex flex-wrap items-end justify-between gap-3">
        <label className="field">
          Window
          <select className="input" value={windowMinutes} onChange={(e) => void setWindow(Number(e.target.value))}>
            {WINDOWS.map((m) => (
              <option key={m} value={m}>
                {m} minutes
              </option>
            ))}
          </select>
        </label>
        <p className="muted m-0 text-sm">
          {/* Only an answer can say the sweeper has not run: loading or failing says nothing about it. */}
          Charges checked up to:{" "}
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
      </div>
      <LiveRegion updatedAt={list.dataUpdatedAt} summary={`${items.length} possible duplicates shown.`} />
      <QueryState
        query={list}
        what="possible duplicates"
        isEmpty={() => items.length === 0}
        empty="No possible duplicate charges within this window."
      >
        {() => (
          <>
            <DataTable
              caption={`Possible duplicates within ${windowMinutes} minutes, newest first`}
              columns={columns}
              data={items}
              rowId={(i) => i.id}
              testId="duplicates"
            />
            <LoadMore query={list} />
          </>
        )}
      </QueryState>
    </>
  );
}
