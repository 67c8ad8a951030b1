"use client";

import { Tooltip } from "radix-ui";
import { relative, utcTime, zonedTime, zoneLabel } from "../format";
import { useBrowserZone, useZone } from "../timeZone";

/**
 * The one way the dashboard shows a time: absolute, in the screen's zone (the header's switch: local or UTC), to
 * the second ("ms" to the millisecond, where events are ordered), relative as secondary, and on hover and on
 * keyboard focus the same instant in the other zone. Until the page knows its zone (on the server, while it
 * hydrates) the time is said in UTC.
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
  const zone = useZone();
  const browser = useBrowserZone();
  if (!date) return <span className="muted">—</span>;
  const shown = zone?.zone ?? "UTC";
  const other =
    shown === "UTC"
      ? browser && browser !== "UTC"
        ? `${zonedTime(date, browser, "ms")} · local time, ${zoneLabel(browser, date)}`
        : utcTime(date)
      : `${utcTime(date)} · shown in ${zoneLabel(shown, date)}`;
  return (
    <Tooltip.Root delayDuration={200}>
      <Tooltip.Trigger asChild>
        <time
          dateTime={date.toISOString()}
          tabIndex={0}
          className="cursor-help underline decoration-dotted decoration-slate-400"
        >
          <span className="whitespace-nowrap">
            {zonedTime(date, shown, precision)}
            {shown === "UTC" && " UTC"}
          </span>
          {showRelative && zone && (
            <span className="muted ml-1 text-xs whitespace-nowrap">({relative(date, now)})</span>
          )}
        </time>
      </Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content sideOffset={4} className="rounded bg-slate-900 px-2 py-1 text-xs text-white shadow">
          {other}
          <Tooltip.Arrow className="fill-slate-900" />
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}

/** A time as text in the screen's zone, for sentences and labels (no tooltip): "2026-12-04 15:00 UTC". */
export function useTimeText(): (date: Date | null | undefined, precision?: "min" | "s") => string {
  const zone = useZone();
  const shown = zone?.zone ?? "UTC";
  return (date, precision = "s") => {
    if (!date) return "—";
    const text = zonedTime(date, shown);
    return `${precision === "min" ? text.slice(0, 16) : text}${shown === "UTC" ? " UTC" : ""}`;
  };
}

/** A time as plain text in the screen's zone, where a sentence says it. */
export function TimeText({ date, precision }: { date: Date | null | undefined; precision?: "min" | "s" }) {
  return <>{useTimeText()(date, precision)}</>;
}
