"use client";

import { useTimeText } from "./Time";

/** Tells screen readers that a live list refreshed, without moving focus. */
export function LiveRegion({ updatedAt, summary }: { updatedAt: number; summary: string }) {
  const timeText = useTimeText();
  return (
    <p aria-live="polite" className="text-xs text-slate-600" data-testid="live-status">
      {updatedAt ? `${summary} Updated ${timeText(new Date(updatedAt)).slice(11)}; refreshes every few seconds.` : ""}
    </p>
  );
}
