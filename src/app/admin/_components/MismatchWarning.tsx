"use client";

import Link from "next/link";
import { Time } from "./ui/Time";

type Mismatch = { id: string; label: string; detectedAt: Date; evidence: Record<string, unknown> };

/** On a charge's or a request's page: the ledger's open findings about it, so no one reads its numbers as settled. */
export function MismatchWarning({ mismatches }: { mismatches: Mismatch[] }) {
  if (mismatches.length === 0) return null;
  return (
    <section
      role="alert"
      aria-label="Open ledger mismatch"
      className="card space-y-1 border-red-300 bg-red-50"
      data-testid="mismatch-warning"
    >
      <p className="bad m-0 font-semibold">
        The ledger has {mismatches.length === 1 ? "an open mismatch" : `${mismatches.length} open mismatches`} about
        this record: what it shows may not be what the gateway holds.
      </p>
      <ul className="m-0 space-y-1 pl-5 text-sm">
        {mismatches.map((m) => (
          <li key={m.id}>
            <strong>{m.label}</strong>, found <Time date={m.detectedAt} />:{" "}
            <code className="break-all">{JSON.stringify(m.evidence)}</code>{" "}
            <Link href={`/admin/ledger#mismatch-${m.id}`}>See it in the ledger</Link>
          </li>
        ))}
      </ul>
    </section>
  );
}
