"use client";

import { fromZonedInput, toZonedInput, zoneLabel } from "../format";
import { useZone } from "../timeZone";

/**
 * A from/until filter in the screen's time zone (the header's switch: local or UTC), to the second ("yesterday
 * afternoon" is asked in the zone the screen shows; the server gets the instants). Each list keeps the two values
 * in its URL. Until the page knows its zone the inputs wait, empty.
 */
export function DateRange({
  since,
  until,
  onChange,
  what = "Created",
}: {
  since: Date | null;
  until: Date | null;
  onChange: (range: { since: Date | null; until: Date | null }) => void;
  what?: string;
}) {
  const zone = useZone();
  const name = zone?.zone ?? "UTC";
  const words = zone?.choice === "local" ? "local time" : "UTC";
  return (
    <fieldset className="flex flex-wrap items-end gap-2" data-testid="date-range">
      <legend className="sr-only">
        {what} between two times ({zone ? zoneLabel(name) : "time zone not known yet"})
      </legend>
      <label className="field">
        {what} from ({words})
        <input
          className="input"
          type="datetime-local"
          step={1}
          disabled={!zone}
          value={zone ? toZonedInput(since, name) : ""}
          onChange={(e) => onChange({ since: fromZonedInput(e.target.value, name), until })}
        />
      </label>
      <label className="field">
        {what} until ({words})
        <input
          className="input"
          type="datetime-local"
          step={1}
          disabled={!zone}
          value={zone ? toZonedInput(until, name) : ""}
          onChange={(e) => onChange({ since, until: fromZonedInput(e.target.value, name) })}
        />
      </label>
      <p className="muted m-0 pb-2 text-xs">{zone ? zoneLabel(name) : ""}</p>
      {since && until && since > until && (
        <p role="alert" className="bad m-0 pb-2 text-sm">
          The range ends before it starts.
        </p>
      )}
    </fieldset>
  );
}
