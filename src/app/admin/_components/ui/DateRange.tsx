"use client";

import { fromLocalInput, localZone, toLocalInput } from "../format";

/**
 * A from/until filter in the browser's local time, to the second ("yesterday afternoon" is asked in local time;
 * the server gets the instants). Each list keeps the two values in its URL.
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
  const zone = localZone();
  return (
    <fieldset className="flex flex-wrap items-end gap-2" data-testid="date-range">
      <legend className="sr-only">
        {what} between two local times ({zone})
      </legend>
      <label className="field">
        {what} from (local time)
        <input
          className="input"
          type="datetime-local"
          step={1}
          value={toLocalInput(since)}
          onChange={(e) => onChange({ since: fromLocalInput(e.target.value), until })}
        />
      </label>
      <label className="field">
        {what} until (local time)
        <input
          className="input"
          type="datetime-local"
          step={1}
          value={toLocalInput(until)}
          onChange={(e) => onChange({ since, until: fromLocalInput(e.target.value) })}
        />
      </label>
      <p className="muted m-0 pb-2 text-xs">{zone}</p>
      {since && until && since > until && (
        <p role="alert" className="bad m-0 pb-2 text-sm">
          The range ends before it starts.
        </p>
      )}
    </fieldset>
  );
}
