"use client";

/** Tells screen readers that a live list refreshed, without moving focus. */
export function LiveRegion({ updatedAt, summary }: { updatedAt: number; summary: string }) {
  const at = updatedAt ? new Date(updatedAt).toISOString().slice(11, 19) : "";
  return (
    <p aria-live="polite" className="text-xs text-slate-600" data-testid="live-status">
      {updatedAt ? `${summary} Updated ${at} UTC; refreshes every few seconds.` : ""}
    </p>
  );
}
