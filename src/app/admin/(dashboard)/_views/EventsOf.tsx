"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "~/trpc/react";
import { QueryState } from "../../_components/ui/QueryState";
import { TimeText } from "../../_components/ui/Time";

/** The events of a charge or a request, each with its deliveries (the charge's and the request's pages). */
export function EventsOf({ chargeId, requestId }: { chargeId?: string; requestId?: string }) {
  const trpc = useTRPC();
  const input = chargeId ? { chargeId } : { requestId: requestId! };
  const events = useQuery(trpc.webhooks.eventsOf.queryOptions(input));
  return (
    <section className="card" aria-label="Events">
      <h2 className="mb-2">Events</h2>
      <QueryState
        query={events}
        what="the events"
        isEmpty={(e) => e.length === 0}
        empty={<p>No event (nothing finished yet, or finished before events were recorded).</p>}
      >
        {(list) => (
          <ul className="space-y-1" data-testid="events">
            {list.map((e) => (
              <li key={e.id}>
                <strong>{e.type}</strong> <code className="text-xs">{e.id}</code>{" "}
                <TimeText date={e.createdAt} precision="s" />
                {e.deliveries.length === 0
                  ? " · no endpoint subscribed"
                  : e.deliveries.map((d) => (
                      <span key={d.id} className="block text-sm">
                        → {d.url ?? "(deleted endpoint)"}: {d.state}, {d.attempts} attempt{d.attempts === 1 ? "" : "s"}
                        {d.lastStatus !== null ? `, last HTTP ${d.lastStatus}` : ""}
                      </span>
                    ))}
              </li>
            ))}
          </ul>
        )}
      </QueryState>
    </section>
  );
}
