"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { zonedTime } from "./format";
import { useZone } from "./timeZone";

/**
 * When the page's numbers were last refreshed: the newest answer of the queries the page shows now (not of pages
 * left behind), in the screen's time zone with seconds. Rendered only in the browser, so the server's clock never
 * shows.
 */
export function LastRefreshed() {
  const queryClient = useQueryClient();
  const [at, setAt] = useState<number | null>(null);
  const zone = useZone();
  useEffect(() => {
    const cache = queryClient.getQueryCache();
    const read = () => {
      const times = cache
        .getAll()
        .filter((q) => q.getObserversCount() > 0 && q.state.status === "success")
        .map((q) => q.state.dataUpdatedAt);
      setAt(times.length ? Math.max(...times) : null);
    };
    read();
    return cache.subscribe(read);
  }, [queryClient]);
  return (
    <span className="muted text-sm" data-testid="last-refreshed">
      {at && zone ? (
        <>
          Refreshed <time dateTime={new Date(at).toISOString()}>{zonedTime(new Date(at), zone.zone).slice(11)}</time>
        </>
      ) : (
        "Not refreshed yet"
      )}
    </span>
  );
}
