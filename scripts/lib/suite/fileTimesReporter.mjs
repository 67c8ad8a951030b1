/**
 * A node:test reporter that writes one line per test file: its wall time (files run one at a time, so from the
 * last event of the file before it to its own last, loading and hooks included) and the sum of its top-level
 * tests' durations, as JSON lines. The node lanes write it next to their log
 * (.data/test-lanes/<lane>.times.jsonl), so that the slowest files, and the shards' balance (fileSeconds.ts), are
 * measured, not guessed. Plain JavaScript: node:test loads it as it is, beside the bundled test files
 * (scripts/lib/bundles.ts).
 *
 * @typedef {{ file?: string; nesting?: number; details?: { duration_ms?: number } }} EventData
 * @param {AsyncIterable<{ type: string; data: EventData }>} source
 */
export default async function* fileTimes(source) {
  const startedAt = Date.now();
  /** @type {Map<string, { lastAt: number; testsMs: number; failed: number }>} */
  const files = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    const entry = files.get(file) ?? { lastAt: 0, testsMs: 0, failed: 0 };
    files.set(file, entry);
    entry.lastAt = Date.now();
    if ((event.type === "test:pass" || event.type === "test:fail") && event.data.nesting === 0) {
      entry.testsMs += event.data.details?.duration_ms ?? 0;
      if (event.type === "test:fail") entry.failed++;
    }
  }
  let previousEnd = startedAt;
  for (const [file, t] of files) {
    const wallMs = t.lastAt - previousEnd;
    previousEnd = t.lastAt;
    // The file as the repository names it, not its bundle (compileTests.ts).
    const relative = file.slice(file.indexOf("/test/") + 1).replace(/\.mjs$/, ".ts");
    yield `${JSON.stringify({ file: relative, wallMs, testsMs: Math.round(t.testsMs), failed: t.failed })}\n`;
  }
}
