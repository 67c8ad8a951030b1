"use client";

import Link from "next/link";
import type { RouterOutputs } from "~/trpc/react";
import { formatGap } from "../../_components/format";
import { Badge } from "../../_components/ui/Badge";

type Pair = RouterOutputs["customers"]["duplicates"]["items"][number];
type Evidence = Pair["evidence"];
type Snapshot = Pair["requests"]["later"];

/** The pair's evidence as the read model words it (src/server/customers/evidence.ts). */
export function EvidenceBadge({ evidence }: { evidence: Evidence }) {
  return (
    <span data-testid="evidence" data-evidence={evidence.key}>
      <Badge tone={evidence.tone} title={evidence.description}>
        {evidence.label}
      </Badge>
    </span>
  );
}

function RequestColumn({ title, chargeId, request }: { title: string; chargeId: string; request: Snapshot }) {
  return (
    <div className="min-w-0 rounded border border-slate-200 p-2">
      <p className="m-0 text-xs font-semibold">
        {title}: <Link href={`/admin/charges/${chargeId}`}>{chargeId}</Link>
      </p>
      {request ? (
        <dl className="m-0 grid grid-cols-[6rem_minmax(0,1fr)] gap-x-2 text-xs">
          <dt className="muted">Key</dt>
          <dd className="m-0 font-mono break-all">
            {request.idempotencyKey === null ? (
              "none (keyless)"
            ) : (
              <Link href={`/admin/requests/${request.requestId}`}>{request.idempotencyKey}</Link>
            )}
          </dd>
          {Object.entries(request.fields ?? {}).map(([name, value]) => (
            <div key={name} className="contents">
              <dt className="muted">{name}</dt>
              <dd className="m-0 font-mono break-all">{JSON.stringify(value)}</dd>
            </div>
          ))}
          <dt className="muted">Request hash</dt>
          <dd className="m-0 font-mono break-all">{request.requestHash.slice(0, 16)}…</dd>
        </dl>
      ) : (
        <p className="muted m-0 text-xs">Its request record had expired before the pair was found.</p>
      )}
    </div>
  );
}

/** The two requests side by side, with whether their canonical bodies (card token included) were identical. */
export function PairRequests({ pair }: { pair: Pick<Pair, "id" | "earlierId" | "requests" | "gapMs"> }) {
  const { earlier, later } = pair.requests;
  const same = earlier && later ? earlier.requestHash === later.requestHash : null;
  return (
    <details className="text-sm">
      <summary className="cursor-pointer">Compare the requests</summary>
      <p className="m-0 my-1 text-xs">
        {formatGap(pair.gapMs)} apart.{" "}
        {same === null
          ? "Cannot compare: a record had expired."
          : same
            ? "Identical canonical requests (the card token too)."
            : "Different requests (the card token or a field differs)."}
      </p>
      <div className="grid gap-2 sm:grid-cols-2" data-testid="pair-requests">
        <RequestColumn title="First" chargeId={pair.earlierId} request={earlier} />
        <RequestColumn title="Second" chargeId={pair.id} request={later} />
      </div>
    </details>
  );
}
