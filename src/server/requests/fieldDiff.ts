// The pure hashing file, not the module index (which opens the database): this runs in unit tests too.
import { canonicalJson } from "~/server/idempotency/canonicalHash";

/** Fields stored beside a record, as JSON text (null for records from before they were stored). */
export function parseFields(text: string | null): Record<string, unknown> | null {
  if (!text) return null;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export type FieldDifference = { field: string; stored: unknown; attempted: unknown };

export type FieldDiff = {
  differences: FieldDifference[];
  /**
   * The card token is never stored, so it cannot be compared directly. The
   * request hash covers the whole body, and a body has no other fields
   * (unknown fields are refused), so when every stored field is equal yet the
   * hashes differ, the token is what differed.
   */
  cardToken: "differed" | "not_compared";
};

const absent = Symbol("absent");

/** Which top-level fields a same-client reuse changed, from the fields stored with the record and with the attempt. */
export function diffFields(stored: Record<string, unknown>, attempted: Record<string, unknown>): FieldDiff {
  const names = [...new Set([...Object.keys(stored), ...Object.keys(attempted)])].sort();
  const differences = names.flatMap((field) => {
    const a = field in stored ? stored[field] : absent;
    const b = field in attempted ? attempted[field] : absent;
    const same = a !== absent && b !== absent ? canonicalJson(a) === canonicalJson(b) : a === b;
    return same ? [] : [{ field, stored: a === absent ? undefined : a, attempted: b === absent ? undefined : b }];
  });
  return { differences, cardToken: differences.length === 0 ? "differed" : "not_compared" };
}
