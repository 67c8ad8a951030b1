"use client";

import { Tooltip } from "radix-ui";
import { localTime, localZone, relative, utcTime } from "../format";

/**
 * The one way the dashboard shows a time: absolute local time to the second ("ms" to the millisecond, where events
 * are ordered), relative as secondary, UTC on hover and on keyboard focus.
 */
export function Time({
  date,
  now,
  precision = "s",
  showRelative = true,
}: {
  date: Date | null | undefined;
  now?: Date;
  precision?: "s" | "ms";
  showRelative?: boolean;
}) {
  if (!date) return <span className="muted">—</span>;
  return (
    <Tooltip.Root delayDuration={200}>
      <Tooltip.Trigger asChild>
        <time
          dateTime={date.toISOString()}
          tabIndex={0}
          className="cursor-help underline decoration-dotted decoration-slate-400"
        >
          <span className="whitespace-nowrap">{localTime(date, precision)}</span>
          {showRelative && <span className="muted ml-1 text-xs whitespace-nowrap">({relative(date, now)})</span>}
        </time>
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content sideOffset={4} className="rounded bg-slate-900 px-2 py-1 text-xs text-white shadow">
          {utcTime(date)} · local time is {localZone(date)}
          <Tooltip.Arrow className="fill-slate-900" />
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}
