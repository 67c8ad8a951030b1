"use client";

import type { ReactNode } from "react";
import { userMessage } from "../errorMessage";

type QueryLike<T> = {
  data: T | undefined;
  error: { message: string; data?: { code?: string; zodError?: unknown } | null } | null;
  isPending: boolean;
  isFetching?: boolean;
  refetch: () => unknown;
};

/**
 * Loading, failed and empty are three different things: a failed or slow query
 * never looks like an empty result. A refresh that fails after data was shown
 * keeps the data and says since when it is old.
 */
export function QueryState<T>({
  query,
  what,
  isEmpty,
  empty,
  children,
}: {
  query: QueryLike<T>;
  /** e.g. "the request log", for the messages. */
  what: string;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Loading what={what} />;
  if (query.data === undefined) return <Failed what={what} error={query.error} retry={query.refetch} />;
  return (
    <>
      {query.error && <Failed what={what} error={query.error} retry={query.refetch} stale />}
      {isEmpty?.(query.data) ? (
        <p className="card muted" data-testid="empty-state">
          {empty ?? "Nothing here."}
        </p>
      ) : (
        children(query.data)
      )}
    </>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="card muted animate-pulse">
      Loading {what}…
    </p>
  );
}

export function Failed({
  what,
  error,
  retry,
  stale = false,
}: {
  what: string;
  error: { message: string; data?: { code?: string } | null } | null;
  retry: () => unknown;
  stale?: boolean;
}) {
  const notFound = error?.data?.code === "NOT_FOUND";
  return (
    <div role="alert" className="card flex flex-wrap items-center justify-between gap-3 border-red-300 bg-red-50">
      <p className="bad m-0">
        {notFound
          ? error!.message
          : `Could not load ${what}${stale ? " (showing the last answer)" : ""}: ${userMessage(error)}`}
      </p>
      {!notFound && (
        <button type="button" className="btn-secondary" onClick={() => retry()}>
          Retry
        </button>
      )}
    </div>
  );
}
