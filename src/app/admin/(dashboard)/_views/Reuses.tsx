"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import type { ColumnDef } from "@tanstack/react-table";
import Link from "next/link";
import { parseAsStringLiteral, useQueryState } from "nuqs";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { UrlCheck } from "../../_components/ui/UrlProblems";
import { formatCount } from "../../_components/format";
import { DataTable, LoadMore } from "../../_components/ui/DataTable";
import { LiveRegion } from "../../_components/ui/LiveRegion";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";

type Group = RouterOutputs["requests"]["reuses"]["groups"][number];

const columnsFor = (cross: boolean): ColumnDef<Group>[] => [
  { header: "Key", cell: ({ row }) => <code className="break-all">{row.original.idempotencyKey}</code> },
  { header: "Attempts", cell: ({ row }) => row.original.attempts },
  { header: "Last attempt", cell: ({ row }) => <Time date={row.original.lastAt} /> },
  { header: "Key owner", cell: ({ row }) => row.original.owner.name },
  ...(cross
    ? [
        {
          header: "Tried by",
          cell: ({ row }: { row: { original: Group } }) => row.original.attemptedBy.map((c) => c.name).join(", "),
        },
      ]
    : []),
  {
    header: "Original record",
    cell: ({ row: { original: g } }) =>
      g.original ? (
        <Link href={`/admin/requests/${g.original.id}`}>record #{g.original.id}</Link>
      ) : (
        <span className="muted">expired</span>
      ),
  },
];

/**
 * Made once: flexRender renders a cell function as a component, so columns rebuilt on each 5-second refresh
 * remounted every cell, and a link a keyboard user had focused lost its focus.
 */
const COLUMNS = { same_client: columnsFor(false), cross_client: columnsFor(true) } as const;

const KIND = parseAsStringLiteral(["same_client", "cross_client"] as const);

export function Reuses() {
  const trpc = useTRPC();
  const [kind, setKind] = useQueryState("kind", KIND.withDefault("same_client"));
  const counts = useQuery(trpc.requests.reuseCounts.queryOptions(undefined, { refetchInterval: 10_000 }));
  const list = useInfiniteQuery(
    trpc.requests.reuses.infiniteQueryOptions(
      { kind, limit: 50 },
      { getNextPageParam: (p) => p.nextCursor, refetchInterval: 5_000 },
    ),
  );
  const groups = list.data?.pages.flatMap((p) => p.groups) ?? [];
  const tabs = [
    { value: "same_client" as const, label: "Same client, another payload", count: counts.data?.sameClient },
    { value: "cross_client" as const, label: "Another client's key", count: counts.data?.crossClient },
  ];
  return (
    <>
      <PageHeader title="Key reuses">
        Requests answered 422 idempotency_key_reused, grouped by key. A same-client reuse is a changed request sent
        under an old key (open the original record to see which fields differed); another client&apos;s key is a
        collision of non-random keys, or guessing. Nothing another client sent is shown as the owner&apos;s.
      </PageHeader>
      <UrlCheck parsers={{ kind: KIND }} />
      {/* biome-ignore lint/a11y/useSemanticElements: toggle buttons, not form fields: no <fieldset> */}
      <div role="group" aria-label="Kind of reuse" className="flex flex-wrap gap-2">
        {tabs.map((t) => (
          <button
            key={t.value}
            type="button"
            aria-pressed={kind === t.value}
            className={kind === t.value ? "btn" : "btn-secondary"}
            onClick={() => void setKind(t.value)}
          >
            {t.label} {t.count && `(${formatCount(t.count)})`}
          </button>
        ))}
      </div>
      <LiveRegion updatedAt={list.dataUpdatedAt} summary={`${groups.length} keys shown.`} />
      <QueryState
        query={list}
        what="key reuses"
        isEmpty={() => groups.length === 0}
        empty="No key was reused this way."
      >
        {() => (
          <>
            <DataTable
              caption={
                kind === "cross_client"
                  ? "Keys another client tried, latest first"
                  : "Keys reused by their own client, latest first"
              }
              columns={COLUMNS[kind]}
              data={groups}
              rowId={(g) => `${g.route}:${g.idempotencyKey}`}
              testId="key-reuses"
            />
            <LoadMore query={list} />
          </>
        )}
      </QueryState>
    </>
  );
}
