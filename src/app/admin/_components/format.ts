import { formatDistanceStrict } from "date-fns";

/** "3 min ago", "in 2 h": relative to `now` (the server's time of the answer, when there is one). */
export function relative(date: Date, now: Date = new Date()): string {
  const words = formatDistanceStrict(date, now, { roundingMethod: "floor" });
  return date.getTime() <= now.getTime() ? `${words} ago` : `in ${words}`;
}

/** The absolute time, in UTC, as every engineer's logs show it (the CLIs'; a page says times in its zone). */
export function absolute(date: Date | null | undefined): string {
  return date
    ? date
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, " UTC")
    : "—";
}

const wallFormats = new Map<string, Intl.DateTimeFormat>();

/** A date's wall-clock parts in an IANA time zone ("UTC" included). */
function wallParts(date: Date, zone: string) {
  let f = wallFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    wallFormats.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(date).map((p) => [p.type, p.value]));
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    time: `${parts.hour}:${parts.minute}:${parts.second}`,
    ms: String(date.getUTCMilliseconds()).padStart(3, "0"),
  };
}

/** The absolute time in a zone, to the second (or the millisecond, where events are ordered): "2026-12-04 15:00:16". */
export function zonedTime(date: Date, zone: string, precision: "s" | "ms" = "s"): string {
  const p = wallParts(date, zone);
  return `${p.date} ${p.time}${precision === "ms" ? `.${p.ms}` : ""}`;
}

/** The zone's offset from UTC at that instant, in minutes (New York in winter: -300). */
export function zoneOffsetMinutes(date: Date, zone: string): number {
  const p = wallParts(date, zone);
  const asUtc = Date.parse(`${p.date}T${p.time}Z`);
  return Math.round((asUtc - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
}

/** "America/New_York (UTC-05:00)", or "UTC". */
export function zoneLabel(zone: string, at: Date = new Date()): string {
  if (zone === "UTC") return "UTC";
  const offset = zoneOffsetMinutes(at, zone);
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return `${zone} (UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")})`;
}

/** The same in UTC, to the millisecond: what the logs and the API show. */
export const utcTime = (date: Date) => `${date.toISOString().replace("T", " ").replace("Z", "")} UTC`;

/** A Date as a datetime-local input's value in a zone (to the second), and the value back as an instant. */
export const toZonedInput = (d: Date | null | undefined, zone: string) =>
  d ? zonedTime(d, zone).replace(" ", "T") : "";

export function fromZonedInput(value: string, zone: string): Date | null {
  if (!value) return null;
  const wall = Date.parse(`${value.length === 16 ? `${value}:00` : value}Z`);
  if (Number.isNaN(wall)) return null;
  // The wall time read as UTC, less the zone's offset then (asked again at the result: across a DST change).
  let at = wall - zoneOffsetMinutes(new Date(wall), zone) * 60_000;
  at = wall - zoneOffsetMinutes(new Date(at), zone) * 60_000;
  return new Date(at);
}

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A gap between two events in seconds, to the tenth: "16.2 s". */
export const formatGap = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function formatMoney(cents: number, currency: string): string {
  return `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;
}

export function formatBytes(n: number): string {
  return n > 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`;
}

export const formatCount = (c: { count: number; capped: boolean }) =>
  c.capped ? `${c.count.toLocaleString("en")}+` : c.count.toLocaleString("en");

export const percent = (share: number | null) => (share === null ? "no traffic" : `${(share * 100).toFixed(1)} %`);

/** Pretty-prints a stored response body; leaves non-JSON as it is. */
export function prettyJson(text: string | null): string {
  if (!text) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
