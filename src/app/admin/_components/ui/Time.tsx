"use client";

import { Tooltip } from "radix-ui";
import { absolute, relative } from "../format";

/** A relative time ("3 min ago") with the absolute one on hover and on keyboard focus. */
export function Time({ date, now }: { date: Date | null | undefined; now?: Date }) {
  if (!date) return <span className="muted">—</span>;
  return (
    <Tooltip.Root delayDuration={200}>
      <Tooltip.Trigger asChild>
        <time
          dateTime={date.toISOString()}
          tabIndex={0}
          className="cursor-help whitespace-nowrap underline decoration-dotted decoration-slate-400"
        >
          {relative(date, now)}
        </time>
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content sideOffset={4} className="rounded bg-slate-900 px-2 py-1 text-xs text-white shadow">
          {absolute(date)}
          <Tooltip.Arrow className="fill-slate-900" />
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}
