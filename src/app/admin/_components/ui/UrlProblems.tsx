"use client";

import { useSearchParams } from "next/navigation";
import { useQueryStates, type ParserMap } from "nuqs";

export type UrlProblem = { name: string; message: string };

/**
 * The filters of the address that cannot be read (nuqs would drop them silently and show everything), and a range
 * whose start is after its end (which would read as "no match"): a list that cannot be what the link meant says so
 * instead of showing something else.
 */
export function useUrlProblems(parsers: ParserMap, range?: { from: string; until: string }): UrlProblem[] {
  const search = useSearchParams();
  const problems: UrlProblem[] = [];
  // Every parser of a single value reads a string; their types say so only one by one.
  const parse = (name: string, raw: string) => (parsers[name] as { parse: (v: string) => unknown }).parse(raw);
  for (const name of Object.keys(parsers)) {
    const raw = search.get(name);
    if (raw !== null && parse(name, raw) === null) {
      problems.push({ name, message: `${name}=“${raw}” is not a valid ${name}` });
    }
  }
  if (range) {
    const from = parse(range.from, search.get(range.from) ?? "");
    const until = parse(range.until, search.get(range.until) ?? "");
    if (from instanceof Date && until instanceof Date && from > until) {
      problems.push({ name: range.until, message: `the range is impossible: ${range.from} is after ${range.until}` });
    }
  }
  return problems;
}

/** Says what is wrong with the address, and offers to drop the offending filters. */
export function UrlProblems({
  problems,
  parsers,
  withheld = false,
}: {
  problems: UrlProblem[];
  parsers: ParserMap;
  /** The list is not shown until the address is fixed (else: the page shows its defaults instead, and says so). */
  withheld?: boolean;
}) {
  const [, set] = useQueryStates(parsers);
  if (problems.length === 0) return null;
  return (
    <div role="alert" className="card space-y-2 border-red-300 bg-red-50" data-testid="url-problems">
      <p className="bad m-0 font-medium">
        This address asks for something that cannot be shown: {problems.map((p) => p.message).join("; ")}.
      </p>
      <p className="m-0 text-sm">
        {withheld
          ? "Nothing is listed until it is fixed: the list would not be what the link asks for."
          : "It is ignored: the page shows its default instead."}
      </p>
      <button
        type="button"
        className="btn-secondary"
        onClick={() => void set(Object.fromEntries(problems.map((p) => [p.name, null])))}
      >
        Remove {problems.length === 1 ? "this filter" : "these filters"}
      </button>
    </div>
  );
}

/** For a page whose address has only choices with a default: an unreadable one is said, and the default shown. */
export function UrlCheck({ parsers }: { parsers: ParserMap }) {
  return <UrlProblems problems={useUrlProblems(parsers)} parsers={parsers} />;
}
