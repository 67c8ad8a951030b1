"use client";

import { useQuery } from "@tanstack/react-query";
import { use } from "react";
import { useTRPC } from "~/trpc/react";
import { formatAge, formatMoney, formatTime, prettyJson } from "../../../_components/format";

export default function RequestDetailPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = use(params);
  const trpc = useTRPC();
  const valid = /^\d{1,19}$/.test(id);
  const { data, isLoading } = useQuery({ ...trpc.requests.byId.queryOptions({ id }), enabled: valid });
  if (!valid || (!isLoading && !data)) return <p>No request record {id}.</p>;
  if (!data) return <p className="muted">Loading…</p>;
  const { request: r, reuses } = data;
  return (
    <>
      <h1>
        Request <code>{r.idempotencyKey ?? "(keyless)"}</code>
      </h1>
      <dl className="card facts" data-testid="request-detail">
        <dt>State</dt>
        <dd data-phase={r.phase.key}>
          {r.phase.label}: {r.phase.description} (attempt {r.attempt})
        </dd>
        <dt>Route</dt>
        <dd>{r.route}</dd>
        <dt>API client</dt>
        <dd>
          {r.apiClient.name} (#{r.apiClient.id})
        </dd>
        <dt>Request hash</dt>
        <dd><code>{r.requestHash}</code></dd>
        <dt>Created</dt>
        <dd>{formatTime(r.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>
          {formatTime(r.updatedAt)} ({formatAge(r.updatedAt.getTime() - r.createdAt.getTime())} after creation)
        </dd>
        <dt>Expires</dt>
        <dd>{formatTime(r.expiresAt)}</dd>
        <dt>Response</dt>
        <dd>{r.responseStatus ?? "none yet"}</dd>
      </dl>
      {r.responseBody && (
        <>
          <h2>Stored response</h2>
          <pre data-testid="stored-response">{prettyJson(r.responseBody)}</pre>
        </>
      )}
      <h2>Charge</h2>
      {r.charge ? (
        <dl className="card facts" data-testid="linked-charge">
          <dt>Id</dt>
          <dd><code>{r.charge.id}</code></dd>
          <dt>Amount</dt>
          <dd>{formatMoney(r.charge.amountCents, r.charge.currency)}</dd>
          <dt>Status</dt>
          <dd>{r.charge.status}{r.charge.failureCode && ` (${r.charge.failureCode})`}</dd>
          <dt>Customer</dt>
          <dd>{r.charge.customerId ?? "—"}</dd>
          <dt>Gateway charge</dt>
          <dd><code>{r.charge.gatewayChargeId}</code></dd>
          <dt>Gateway key</dt>
          <dd><code>{r.charge.gatewayIdempotencyKey}</code></dd>
        </dl>
      ) : (
        <p className="muted">No charge recorded for this request.</p>
      )}
      {reuses.length > 0 && (
        <>
          <h2>Reuse attempts</h2>
          <ul>
            {reuses.map((u) => (
              <li key={String(u.id)}>
                {formatTime(u.createdAt)}: client #{u.apiClientId}, hash <code>{u.attemptedHash.slice(0, 16)}…</code>
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
