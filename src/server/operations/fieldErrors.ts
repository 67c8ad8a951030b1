import type { z } from "zod";

/**
 * Field name -> messages, as returned in invalid_request errors. Collected in a
 * Map: a plain object would answer `fields["constructor"]` with Object's own
 * constructor, and a client's field may be called anything.
 */
export function fieldErrors(error: z.ZodError): Record<string, string[]> {
  const fields = new Map<string, string[]>();
  const add = (name: string, message: string) => fields.set(name, [...(fields.get(name) ?? []), message]);
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") for (const key of issue.keys) add(key, "is not a known field");
    else add(issue.path.length > 0 ? issue.path.join(".") : "body", issue.message);
  }
  return Object.fromEntries(fields); // defines own properties, "__proto__" included
}
