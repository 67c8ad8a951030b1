"use client";

import { zoneLabel } from "./format";
import { chooseZone, useBrowserZone, useZone, type ZoneChoice } from "./timeZone";

/** The header's switch of the zone every time on the screen is shown in. */
export function TimeZoneSwitch() {
  const zone = useZone();
  const browser = useBrowserZone();
  if (!zone || !browser) return null;
  return (
    <label className="flex items-center gap-1 text-sm" data-testid="time-zone">
      <span className="muted">Times in</span>
      <select className="input py-1" value={zone.choice} onChange={(e) => chooseZone(e.target.value as ZoneChoice)}>
        <option value="local">local time, {zoneLabel(browser)}</option>
        <option value="utc">UTC</option>
      </select>
    </label>
  );
}
