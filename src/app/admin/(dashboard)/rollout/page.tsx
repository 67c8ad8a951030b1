"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "~/trpc/react";
import { formatTime } from "../../_components/format";
import { KeylessChart } from "../../_components/KeylessChart";

const percent = (share: number) => `${(share * 100).toFixed(1)} %`;

export default function RolloutPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [granularity, setGranularity] = useState<"hour" | "day">("hour");
  const overview = useQuery(trpc.rollout.overview.queryOptions({ granularity }));
  const setMode = useMutation(
    trpc.rollout.setMode.mutationOptions({ onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.rollout.overview.pathKey() }) }),
  );
  const data = overview.data;
  if (!data) return <p className="muted">Loading…</p>;
  const next = data.mode === "optional" ? "required" : "optional";

  return (
    <>
      <h1>Idempotency-Key rollout</h1>
      <section className="card" data-testid="mode-panel">
        <p>
          Mode: <strong data-testid="current-mode">{data.mode}</strong>{" "}
          {data.mode === "optional" ? "— keyless charges are accepted and counted." : "— keyless charges get 400 idempotency_key_required."}
        </p>
        <p data-testid="safe-to-enforce" className={data.safeToEnforce ? "good" : "warn"}>
          {data.safeToEnforce
            ? `Safe to enforce: no keyless request in the last ${data.windowHours} h (${data.keyedRequestsInWindow} keyed).`
            : `Not yet safe to enforce: last keyless request ${formatTime(data.lastKeylessAt)} (window ${data.windowHours} h).`}
        </p>
        <button
          onClick={() => {
            if (window.confirm(`Switch the Idempotency-Key mode to "${next}"?`)) setMode.mutate({ mode: next });
          }}
          disabled={setMode.isPending}
        >
          Switch to {next}
        </button>
        {setMode.error && <p role="alert" className="bad">{setMode.error.message}</p>}
      </section>

      <section className="card">
        <h2>
          Share of requests without a key{" "}
          <select aria-label="Granularity" value={granularity} onChange={(e) => setGranularity(e.target.value as "hour" | "day")}>
            <option value="hour">hourly, last 48 h</option>
            <option value="day">daily, last 30 days</option>
          </select>
        </h2>
        <KeylessChart series={data.series} />
      </section>

      <section className="card" data-testid="clients-keyless">
        <h2>By API client</h2>
        <table>
          <thead>
            <tr><th>Client</th><th>Key</th><th>Keyless</th><th>Keyed</th><th>Keyless share</th><th>Last keyless request</th></tr>
          </thead>
          <tbody>
            {data.clients.map((c) => (
              <tr key={c.apiClientId} className={c.keyless > 0 ? "warn" : undefined}>
                <td>{c.name}</td>
                <td><code>{c.keyPreview}</code></td>
                <td>{c.keyless}</td>
                <td>{c.keyed}</td>
                <td>{percent(c.keylessShare)}</td>
                <td>{formatTime(c.lastKeylessAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p className="muted">Keyless requests are counted before they are answered; keyed counts can lag by a second.</p>
      </section>

      <section className="card" data-testid="audit-log">
        <h2>Mode changes</h2>
        {data.auditLog.length === 0 ? (
          <p className="muted">The mode has never been changed.</p>
        ) : (
          <ul>
            {data.auditLog.map((entry) => (
              <li key={entry.id}>
                {formatTime(entry.createdAt)}: {entry.actor} switched {entry.fromMode} → {entry.toMode}
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
