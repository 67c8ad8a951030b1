import { invalidRequest } from "./errors";

/**
 * The part of Stripe's search query language the adapter uses:
 * `metadata['key']:'value'` and `status:'value'` clauses joined by AND, values
 * in single or double quotes with backslash escapes. Anything else is refused
 * loudly rather than half understood.
 */
export type SearchClause = { field: "metadata"; key: string; value: string } | { field: "status"; value: string };

const FIELD = String.raw`(?:metadata\[(?:'([^'"\\[\]]+)'|"([^'"\\[\]]+)")\]|(status))`;
const VALUE = String.raw`(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")`;
const CLAUSE = new RegExp(String.raw`\s*${FIELD}\s*:\s*${VALUE}\s*`, "y");
const AND = /AND\s+/y;

const unescapeValue = (value: string) => value.replace(/\\(.)/g, "$1");

export function parseSearchQuery(query: string): SearchClause[] {
  const clauses: SearchClause[] = [];
  let at = 0;
  for (;;) {
    CLAUSE.lastIndex = at;
    const m = CLAUSE.exec(query);
    if (!m) break;
    at = CLAUSE.lastIndex;
    const value = unescapeValue(m[4] ?? m[5] ?? "");
    clauses.push(m[3] ? { field: "status", value } : { field: "metadata", key: m[1] ?? m[2]!, value });
    AND.lastIndex = at;
    if (!AND.exec(query)) break;
    at = AND.lastIndex;
  }
  if (clauses.length === 0 || at !== query.length) {
    throw invalidRequest(
      `The simulator cannot parse the search query at position ${at}: it supports metadata['key']:'value' and ` +
        "status:'value' clauses joined by AND.",
      { param: "query" },
    );
  }
  return clauses;
}
