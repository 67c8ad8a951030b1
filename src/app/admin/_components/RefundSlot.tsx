"use client";

import Link from "next/link";

/**
 * PLACEHOLDER for the refund of a likely double charge (issue 30, item 2): the incident view and the duplicates list
 * render this beside each pair. Until the refund lands it links to the later charge's page; the refund replaces the
 * body of this component (one key per refund intention, a confirmation, a reason) and keeps its props.
 */
export function RefundSlot({ chargeId, evidence }: { chargeId: string; evidence: string }) {
  return (
    <Link
      href={`/admin/charges/${chargeId}`}
      className="text-sm whitespace-nowrap"
      data-testid="refund-slot"
      data-evidence={evidence}
    >
      Review charge {chargeId.slice(0, 10)}…
    </Link>
  );
}
