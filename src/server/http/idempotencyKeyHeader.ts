import { parseItem } from "structured-headers";
import { IDEMPOTENCY_KEY_HEADER, keyProblem, MAX_KEY_LENGTH } from "@charges/client/idempotencyProtocol";

export { IDEMPOTENCY_KEY_HEADER, MAX_KEY_LENGTH };

/**
 * The dashboard's own refunds run under keys that start with this (src/server/refunds/fromDashboard.ts). No API
 * client may send one: otherwise a client that knows a charge id could take the key of support's refund first and
 * make it fail. Keys are compared byte for byte, so this is exactly the reserved space.
 */
export const DASHBOARD_KEY_PREFIX = "dashboard:";

export const isDashboardKey = (key: string | null): boolean => key?.startsWith(DASHBOARD_KEY_PREFIX) ?? false;

export type ParsedKey = { kind: "valid"; key: string } | { kind: "invalid"; reason: string };
export type ParsedKeyHeader = { kind: "absent" } | ParsedKey;

const invalid = (reason: string): ParsedKey => ({ kind: "invalid", reason });

/**
 * Reads the Idempotency-Key header (the field value as the server received it).
 *
 * The draft defines it as an RFC 9651 Item whose value is a String:
 * `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`, escapes (`\"`, `\\`)
 * decoded, parameters ignored. Stripe-style clients send the key bare; a value
 * that does not start with a quote is taken as it is.
 *
 * Node joins repeated field lines into one value, `k1, k2`, so a comma outside a
 * quoted string means two field lines or a list: refused, never taken as the
 * key "k1, k2" (which would charge as an operation nobody asked for).
 */
export function parseIdempotencyKeyHeader(
  value: string | null,
  { dashboard = false }: { dashboard?: boolean } = {},
): ParsedKeyHeader {
  if (value === null) return { kind: "absent" };
  const parsed = parseIdempotencyKey(value);
  if (parsed.kind === "valid" && isDashboardKey(parsed.key) && !dashboard) {
    return invalid(`Keys starting with "${DASHBOARD_KEY_PREFIX}" are reserved for the dashboard's own refunds`);
  }
  return parsed;
}

/**
 * A key as the header carries it, wherever it comes from: GET /api/charges?idempotency_key= takes exactly what
 * the header takes, so that a client never finds 404 for a key it charged under (README "The rules of keys").
 */
export function parseIdempotencyKey(value: string): ParsedKey {
  const trimmed = value.trim();
  if (trimmed.startsWith('"')) return parseStructured(trimmed);
  if (trimmed.includes(",")) {
    return invalid(`Send exactly one ${IDEMPOTENCY_KEY_HEADER} field (two field lines or a list arrive joined by ",")`);
  }
  const problem = keyProblem(trimmed);
  return problem ? invalid(problem) : { kind: "valid", key: trimmed };
}

function parseStructured(value: string): ParsedKey {
  let item: unknown;
  try {
    [item] = parseItem(value);
  } catch (error) {
    const detail = (error as Error).message.replace(/^Parse error: /, "");
    const hint = value.includes(",") ? `; send exactly one ${IDEMPOTENCY_KEY_HEADER} field` : "";
    return invalid(`${IDEMPOTENCY_KEY_HEADER} is not a valid structured-field string (${detail})${hint}`);
  }
  if (typeof item !== "string") return invalid(`${IDEMPOTENCY_KEY_HEADER} must be a string`);
  const problem = keyProblem(item);
  return problem ? invalid(problem) : { kind: "valid", key: item };
}
