import { format, formatDistanceStrict } from "date-fns";

/** "3 min ago", "in 2 h": relative to `now` (the server's time of the answer, when there is one). */
export function relative(date: Date, now: Date = new Date()): string {
  const words = formatDistanceStrict(date, now, { roundingMethod: "floor" });
  return date.getTime() <= now.getTime() ? `${words} ago` : `in ${words}`;
}

/** The absolute time, in UTC, as every engineer's logs show it. */
export function absolute(date: Date | null | undefined): string {
  return date
    ? date
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, " UTC")
    : "—";
}

/** The absolute local time, to the second (or the millisecond where events are ordered): what support reads. */
export function localTime(date: Date, precision: "s" | "ms" = "s"): string {
  return format(date, precision === "ms" ? "yyyy-MM-dd HH:mm:ss.SSS" : "yyyy-MM-dd HH:mm:ss");
}

/** The same in UTC, to the millisecond: what the logs and the API show. */
export const utcTime = (date: Date) => `${date.toISOString().replace("T", " ").replace("Z", "")} UTC`;

/** The browser's time zone, e.g. "Europe/Berlin (UTC+01:00)", for labels of local times. */
export function localZone(at: Date = new Date()): string {
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return `${name} (UTC${format(at, "xxx")})`;
}

/** A Date as a datetime-local input's value (local time, to the second) and back. */
export const toLocalInput = (d: Date | null | undefined) => (d ? format(d, "yyyy-MM-dd'T'HH:mm:ss") : "");
export const fromLocalInput = (v: string) => (v ? new Date(v) : null);

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
