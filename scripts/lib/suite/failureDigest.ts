/**
 * The lines of a failed step's log that say what failed (node:test's and Playwright's failure marks, errors, tsc's and
 * Biome's findings; a fault run's seed; the few lines after a list's head: a fault run's violations, the test runner's
 * FAILED), a few per step, or else its last lines: printed last, beside the summary, so that a reader who sees only
 * the end of CI's output still sees why.
 */
const FAILURE_LINE = new RegExp(
  `^\\s*(${[
    "not ok\\b|✖|✘|\\d+\\) ", // node:test's TAP and spec reporters, Playwright's list
    "fault run: seed",
    "[A-Za-z]*Error\\b( \\[\\w+\\])?:", // Error:, TypeError:, AssertionError [ERR_ASSERTION]:
    "\\S+\\(\\d+,\\d+\\): error TS\\d+", // tsc
    "\\S+(:\\d+:\\d+)? (lint\\/|format\\b)", // Biome
  ].join("|")})`,
);
const LIST_HEAD = /^\s*(violations: [1-9]|FAILED:)/;
const LIST_LINES = 3;
const DIGEST_LINES = 8;

export function failureDigest(log: string): string[] {
  const lines = log.split("\n");
  const picked = lines.flatMap((line, i) =>
    LIST_HEAD.test(line) ? lines.slice(i, i + 1 + LIST_LINES) : FAILURE_LINE.test(line) ? [line] : [],
  );
  const shown = picked.length > 0 ? picked : lines.filter((l) => l.trim()).slice(-3);
  const unique = [...new Set(shown.map((l) => l.trim().slice(0, 200)).filter(Boolean))];
  return unique.slice(0, DIGEST_LINES);
}
