import { createHash } from "node:crypto";

/**
 * Canonical JSON: object keys sorted at every depth, no whitespace, numbers as
 * JSON.stringify writes them. Two bodies that differ only in key order or
 * formatting hash the same; any change of value does not.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** sha256 (hex) of the canonical JSON of a request body: the request fingerprint. */
export function requestHash(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}
