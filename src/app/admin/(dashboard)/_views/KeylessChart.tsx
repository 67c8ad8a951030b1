"use client";

import {
  Brush,
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
import { percent, zonedTime } from "../../_components/format";
import { useZone } from "../../_components/timeZone";
import { TimeText, useTimeText } from "../../_components/ui/Time";

type Series = RouterOutputs["rollout"]["series"];

const COLOURS = ["#1e293b", "#b45309", "#4f46e5", "#047857", "#be123c", "#0369a1", "#6d28d9"];

type Granularity = Series["granularity"];

/** An axis label in the screen's time zone: the minute or hour ("14:05", "14:00") or the day ("12-04"). */
const tick = (granularity: Granularity, zone: string) => (t: number) =>
  granularity === "day" ? zonedTime(new Date(t), zone).slice(5, 10) : zonedTime(new Date(t), zone).slice(11, 16);

/** Per minute the counts come from the request records: attempts and refused requests are not among them. */
const counted = (n: number | null) => (n === null ? "—" : n);

/** Up to 100 %, in steps a reader can add up: the top tick is always drawn (and labelled, never clipped). */
function axisTicks(max: number): number[] {
  const top = Math.min(100, Math.max(4, Math.ceil((max * 1.15) / 4) * 4));
  return [0, top / 4, top / 2, (top * 3) / 4, top];
}

/**
 * The keyless share over time (Recharts): one line for all clients and one per
 * chosen client, the 0 % enforcement threshold, the safe-to-enforce window and
 * the mode's switches drawn, buckets without any traffic left as gaps (not 0 %;
 * each bucket with traffic has a dot, so one between two gaps still shows), a
 * brush to zoom into part of the range (which starts where the counts do, not
 * a fixed span earlier), keyboard access (arrow keys move the tooltip), and the
 * same numbers as a table below.
 */
export function KeylessChart({
  series,
  granularity,
  names,
  windowStart,
  route,
}: {
  series: Series;
  granularity: Granularity;
  names: Map<number, string>;
  windowStart: Date;
  /** The money route shown, or null for all of them. */
  route: string | null;
}) {
  const zone = useZone()?.zone ?? "UTC";
  const timeText = useTimeText();
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
  const ticks = axisTicks(max);
  const top = ticks.at(-1)!;
  const first = rows[0]?.t ?? 0;
  const last = rows.at(-1)?.t ?? 0;
  const noTraffic = series.all.filter((p) => p.keylessShare === null).length;
  const switches = series.modeChanges.filter((m) => m.at.getTime() >= first);
  const unit = `${granularity}s`;
  const shortHistory = series.since.getTime() > series.spanStart.getTime();
  return (
    <figure className="m-0 min-w-0">
      <figcaption className="mb-2 text-sm muted break-words">
        Share of {route ?? "money requests (every route)"} accepted without an Idempotency-Key (keyless accepted against
        keyed operations; refused requests are not in it), per {granularity}, in % (axis up to {`${top} %`}), from{" "}
        <TimeText date={series.since} />
        {shortHistory ? ", when the counts begin" : ""}. Gaps are {unit} without any traffic ({noTraffic} of{" "}
        {rows.length}); the shaded band is the safe-to-enforce window; dashed vertical lines are switches of the mode (
        {switches.length}){rows.length > 2 ? "; drag the brush below the chart to zoom" : ""}. The header can be
        required once the share stays at 0 %.
      </figcaption>
      <div className="h-80 w-full min-w-0" data-testid="keyless-chart">
        <ResponsiveContainer width="100%" height="100%">
          <LineChart data={rows} margin={{ top: 16, right: 12, bottom: 4, left: 4 }} accessibilityLayer>
            <CartesianGrid stroke="#e2e8f0" />
            <XAxis
              dataKey="t"
              type="number"
              scale="time"
              domain={[first, last]}
              tickFormatter={tick(granularity, zone)}
              stroke="#475569"
              minTickGap={24}
            />
            <YAxis
              domain={[0, top]}
              ticks={ticks}
              interval={0}
              tickFormatter={(v: number) => `${Number(v.toFixed(1))} %`}
              stroke="#475569"
              width={60}
            />
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
            {switches.map((m) => (
              <ReferenceLine
                key={`${m.at.getTime()}-${m.scope}-${m.apiClientId ?? ""}`}
                x={Math.min(last, Math.max(first, m.at.getTime()))}
                stroke={m.to === "required" ? "#047857" : "#b45309"}
                strokeDasharray="3 3"
                ifOverflow="extendDomain"
                label={{
                  value:
                    m.scope === "global"
                      ? `all ${m.to}`
                      : `${names.get(m.apiClientId ?? 0) ?? `client ${m.apiClientId}`} ${
                          m.to === "global" ? "follows global" : m.to
                        }`,
                  position: "insideTopLeft",
                  fill: "#334155",
                  fontSize: 11,
                }}
              />
            ))}
            <Tooltip
              labelFormatter={(t) => timeText(new Date(Number(t)))}
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
            {rows.length > 2 && (
              <Brush
                dataKey="t"
                height={24}
                stroke="#4f46e5"
                tickFormatter={tick(granularity, zone)}
                travellerWidth={10}
              />
            )}
          </LineChart>
        </ResponsiveContainer>
      </div>
      <details className="mt-2">
        <summary className="cursor-pointer text-sm">The chart&apos;s numbers as a table</summary>
        <div className="table-box mt-2 max-h-80 overflow-y-auto" tabIndex={0}>
          <table className="data-table" data-testid="keyless-table">
            <caption>
              Keyless share per {granularity}, all clients, {route ?? "every route"}
            </caption>
            <thead>
              <tr>
                <th scope="col">{{ minute: "Minute", hour: "Hour", day: "Day" }[granularity]}</th>
                <th scope="col">Keyed operations</th>
                <th scope="col">Keyed attempts</th>
                <th scope="col">Keyless accepted</th>
                <th scope="col">Keyless refused</th>
                <th scope="col">Keyless share</th>
              </tr>
            </thead>
            <tbody>
              {series.all.map((p) => (
                <tr key={p.bucket.getTime()}>
                  <td>
                    <TimeText date={p.bucket} />
                  </td>
                  <td>{p.keyed}</td>
                  <td>{counted(p.keyedAttempts)}</td>
                  <td>{p.keyless}</td>
                  <td>{counted(p.rejected)}</td>
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
