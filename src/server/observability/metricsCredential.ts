import { timingSafeEqual } from "node:crypto";
import { env } from "~/env";

/** Compares in constant time, so the answer's timing says nothing about how much of a guess was right. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The request carries `Authorization: Bearer <METRICS_TOKEN>` (never true while METRICS_TOKEN is unset). */
export function hasMetricsCredential(request: Request): boolean {
  if (!env.METRICS_TOKEN) return false;
  const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  return given !== undefined && sameToken(given, env.METRICS_TOKEN);
}
