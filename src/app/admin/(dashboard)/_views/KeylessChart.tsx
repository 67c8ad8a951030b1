"use client";

import {
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ReferenceArea,
  ReferenceLine,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";
import type { RouterOutputs } from "~/trpc/react";
import { absolute, percent } from "../../_components/format";

type Series = RouterOutputs["rollout"]["series"];

const COLOURS = ["#1e293b", "#b45309", "#4f46e5", "#047857", "#be123c", "#0369a1", "#6d28d9"];

const tick = (granularity: "hour" | "day") => (t: number) =>
  granularity === "hour" ? new Date(t).toISOString().slice(11, 16) : new Date(t).toISOString().slice(5, 10);

/**
 * The keyless share over time (Recharts): one line for all clients and one per
 * chosen client, the 0 % enforcement threshold and the safe-to-enforce window
 * drawn, buckets without any traffic left as gaps (not 0 %; each bucket with
 * traffic has a dot, so one between two gaps still shows), keyboard access
 * (arrow keys move the tooltip), and the same numbers as a table below.
 */
export function KeylessChart({
  series,
  granularity,
  names,
  windowStart,
}: {
  series: Series;
  granularity: "hour" | "day";
  names: Map<number, string>;
  windowStart: Date;
}) {
  const rows = series.all.map((p, i) => {
    const row: Record<string, number | null> = {
      t: p.bucket.getTime(),
      all: p.keylessShare === null ? null : p.keylessShare * 100,
    };
    for (const c of series.clients) {
      const q = c.points[i];
      row[`c${c.apiClientId}`] = q && q.keylessShare !== null ? q.keylessShare * 100 : null;
    }
    return row;
  });
  const max = Math.max(
    1,
    ...rows.flatMap((r) =>
      Object.entries(r)
        .filter(([k]) => k !== "t")
        .map(([, v]) => v ?? 0),
    ),
  );
  const top = Math.min(100, Math.ceil((max * 1.15) / 5) * 5);
  const first = rows[0]?.t ?? 0;
  const last = rows.at(-1)?.t ?? 0;
  const noTraffic = series.all.filter((p) => p.keylessShare === null).length;
  return (
    <figure className="m-0">
      <figcaption className="mb-2 text-sm muted">
        Share of POST /api/charges sent without an Idempotency-Key, per {granularity}, in % (axis up to {top} %). Gaps
        are {granularity === "hour" ? "hours" : "days"} without any traffic ({noTraffic} of {rows.length}); the shaded
        band is the safe-to-enforce window; the header can be required once the share stays at 0 %.
      </figcaption>
      <div className="h-72 w-full" data-testid="keyless-chart">
        <ResponsiveContainer width="100%" height="100%">
          <LineChart data={rows} margin={{ top: 8, right: 16, bottom: 8, left: 0 }} accessibilityLayer>
            <CartesianGrid stroke="#e2e8f0" />
            <XAxis
              dataKey="t"
              type="number"
              scale="time"
              domain={[first, last]}
              tickFormatter={tick(granularity)}
              stroke="#475569"
              minTickGap={24}
            />
            <YAxis domain={[0, top]} tickFormatter={(v: number) => `${v} %`} stroke="#475569" width={52} />
            <ReferenceArea
              x1={Math.max(first, windowStart.getTime())}
              x2={last}
              fill="#6366f1"
              fillOpacity={0.08}
              label={{ value: "window", position: "insideTopRight", fill: "#3730a3" }}
            />
            <ReferenceLine
              y={0}
              stroke="#047857"
              strokeDasharray="4 4"
              label={{ value: "enforce at 0 %", position: "insideBottomLeft", fill: "#065f46" }}
            />
            <Tooltip
              labelFormatter={(t) => absolute(new Date(Number(t)))}
              formatter={(value, name) => [
                value === null || value === undefined ? "no traffic" : `${Number(value).toFixed(1)} %`,
                name,
              ]}
            />
            <Legend />
            <Line
              dataKey="all"
              name="All clients"
              stroke={COLOURS[0]}
              strokeWidth={2}
              dot={{ r: 3 }}
              connectNulls={false}
              isAnimationActive={false}
            />
            {series.clients.map((c, i) => (
              <Line
                key={c.apiClientId}
                dataKey={`c${c.apiClientId}`}
                name={names.get(c.apiClientId) ?? `client ${c.apiClientId}`}
                stroke={COLOURS[(i + 1) % COLOURS.length]}
                dot={{ r: 3 }}
                connectNulls={false}
                isAnimationActive={false}
              />
            ))}
          </LineChart>
        </ResponsiveContainer>
      </div>
      <details className="mt-2">
        <summary className="cursor-pointer text-sm">The chart&apos;s numbers as a table</summary>
        <div className="table-box mt-2 max-h-80 overflow-y-auto" tabIndex={0}>
          <table className="data-table" data-testid="keyless-table">
            <caption>Keyless share per {granularity}, all clients</caption>
            <thead>
              <tr>
                <th scope="col">{granularity === "hour" ? "Hour (UTC)" : "Day (UTC)"}</th>
                <th scope="col">Keyed</th>
                <th scope="col">Keyless</th>
                <th scope="col">Refused</th>
                <th scope="col">Keyless share</th>
              </tr>
            </thead>
            <tbody>
              {series.all.map((p) => (
                <tr key={p.bucket.getTime()}>
                  <td>{absolute(p.bucket)}</td>
                  <td>{p.keyed}</td>
                  <td>{p.keyless}</td>
                  <td>{p.rejected}</td>
                  <td>{percent(p.keylessShare)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
