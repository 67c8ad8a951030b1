"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { userMessage } from "../../_components/errorMessage";
import { useTRPC } from "~/trpc/react";
import { Time } from "../../_components/ui/Time";

type Filters = { action?: string; actor?: string; since?: Date };

export function AuditLog() {
  const trpc = useTRPC();
  const actions = useQuery(trpc.audit.actions.queryOptions());
  const [filters, setFilters] = useState<Filters>({});
  const [actorInput, setActorInput] = useState("");
  const input = { action: filters.action as never, actor: filters.actor, since: filters.since, limit: 50 };
  const log = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions(input, { getNextPageParam: (page) => page.nextCursor }),
  );
  const entries = log.data?.pages.flatMap((p) => p.items) ?? [];

  return (
    <>
      <h1 className="mb-2">Audit log</h1>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...filters, actor: actorInput.trim() || undefined });
        }}
      >
        <label className="field">
          Action{" "}
          <select
            className="input"
            value={filters.action ?? ""}
            onChange={(e) => setFilters({ ...filters, action: e.target.value || undefined })}
          >
            <option value="">all</option>
            {actions.data?.map((a) => (
              <option key={a}>{a}</option>
            ))}
          </select>
        </label>
        <label className="field">
          Actor{" "}
          <input
            className="input"
            value={actorInput}
            onChange={(e) => setActorInput(e.target.value)}
            placeholder="e-mail or cli:name"
          />
        </label>
        <label className="field">
          Since{" "}
          <select
            className="input"
            onChange={(e) =>
              setFilters({
                ...filters,
                since: e.target.value ? new Date(Date.now() - Number(e.target.value) * 3_600_000) : undefined,
              })
            }
          >
            <option value="">any time</option>
            <option value="1">last hour</option>
            <option value="24">last 24 h</option>
            <option value="168">last 7 days</option>
          </select>
        </label>
        <button className="btn" type="submit">
          Filter
        </button>
      </form>
      {log.error && (
        <p role="alert" className="bad">
          {userMessage(log.error)}
        </p>
      )}
      <div className="table-box" tabIndex={0}>
        <table className="data-table" aria-label="Audit entries">
          <thead>
            <tr>
              <th>Time</th>
              <th>Action</th>
              <th>Actor</th>
              <th>Target</th>
              <th>Details</th>
              <th>Address</th>
              <th>User agent</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id}>
                <td>
                  <Time date={e.createdAt} />
                </td>
                <td>{e.action}</td>
                <td>{e.actorLabel ?? e.actorType}</td>
                <td>{e.targetType ? `${e.targetType} ${e.targetId}` : "—"}</td>
                <td>
                  <code>{e.details ? JSON.stringify(e.details) : ""}</code>
                </td>
                <td>{e.ipAddress ?? "—"}</td>
                <td className="muted">{e.userAgent ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {entries.length === 0 && log.isSuccess && <p className="muted">No entries match.</p>}
      {log.hasNextPage && (
        <button type="button" className="btn" onClick={() => log.fetchNextPage()} disabled={log.isFetchingNextPage}>
          Older entries
        </button>
      )}
    </>
  );
}
