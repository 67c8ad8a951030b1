/** Bars of the keyless share per bucket (0–100 %), with the request count in each bar's tooltip. */
export function KeylessChart({ series }: { series: { bucket: Date; keyed: number; keyless: number; keylessShare: number }[] }) {
  if (series.every((p) => p.keyed + p.keyless === 0)) return <p className="muted">No POST /api/charges traffic in this period.</p>;
  const width = 720;
  const height = 180;
  const barWidth = width / series.length;
  return (
    <svg role="img" aria-label="Share of requests without an Idempotency-Key" viewBox={`0 0 ${width} ${height + 20}`} className="chart" data-testid="keyless-chart">
      <line x1={0} y1={height} x2={width} y2={height} stroke="currentColor" strokeOpacity={0.3} />
      <line x1={0} y1={0} x2={width} y2={0} stroke="currentColor" strokeOpacity={0.1} />
      <text x={4} y={12} fontSize={11} opacity={0.6}>100 % keyless</text>
      {series.map((point, i) => {
        const h = Math.max(point.keyless > 0 ? 2 : 0, point.keylessShare * height);
        return (
          <g key={point.bucket.toISOString()}>
            <rect x={i * barWidth + 1} y={height - h} width={Math.max(1, barWidth - 2)} height={h} fill="var(--warn)">
              <title>
                {`${point.bucket.toISOString().slice(0, 16).replace("T", " ")}: ${(point.keylessShare * 100).toFixed(1)} % keyless (${point.keyless} of ${point.keyless + point.keyed})`}
              </title>
            </rect>
          </g>
        );
      })}
      <text x={0} y={height + 16} fontSize={11}>{series[0]!.bucket.toISOString().slice(0, 13).replace("T", " ")}h</text>
      <text x={width} y={height + 16} fontSize={11} textAnchor="end">{series.at(-1)!.bucket.toISOString().slice(0, 13).replace("T", " ")}h</text>
    </svg>
  );
}
