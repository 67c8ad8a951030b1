/**
 * `npm run test:times`: after a whole `npm test`, prints each test file's measured wall time per gateway (from
 * the node lanes' .data/test-lanes/node-<gateway>-<i>.times.jsonl, and the browser specs' from the e2e lanes'
 * Playwright lines) and rewrites the table the shards are balanced by (scripts/lib/suite/fileSeconds.ts) with them.
 * Files a run did not measure (files of a lane that failed early) keep their seconds.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { root } from "./lib/config";
import { FILE_SECONDS } from "./lib/suite/fileSeconds";

const LOGS = path.join(root, ".data/test-lanes");
const TABLE = path.join(root, "scripts/lib/suite/fileSeconds.ts");

const measured = new Map<string, [number | undefined, number | undefined]>();
for (const log of existsSync(LOGS) ? readdirSync(LOGS) : []) {
  const lane = /^node-(sim|stripe)-\d+\.times\.jsonl$/.exec(log);
  if (!lane) continue;
  const column = lane[1] === "sim" ? 0 : 1;
  for (const line of readFileSync(path.join(LOGS, log), "utf8").split("\n").filter(Boolean)) {
    const { file, wallMs } = JSON.parse(line) as { file: string; wallMs: number };
    const entry = measured.get(file) ?? [undefined, undefined];
    entry[column] = Math.max(1, Math.round(wallMs / 1000));
    measured.set(file, entry);
  }
}
/** A Playwright list-reporter line: "✓  12 e2e/x.spec.ts:40:1 › what it does (2.4m)" (also s, ms). */
const SPEC_LINE = /\s(e2e\/[\w.-]+\.spec\.ts):\d+:\d+ .*\(([\d.]+)(ms|s|m)\)\s*$/;
const UNIT_SECONDS = { ms: 0.001, s: 1, m: 60 } as const;
const specSeconds = new Map<string, number>();
for (const log of existsSync(LOGS) ? readdirSync(LOGS).filter((f) => /^e2e-\d+\.log$/.test(f)) : []) {
  for (const line of readFileSync(path.join(LOGS, log), "utf8").split("\n")) {
    const m = SPEC_LINE.exec(line);
    if (m) specSeconds.set(m[1]!, (specSeconds.get(m[1]!) ?? 0) + Number(m[2]) * UNIT_SECONDS[m[3] as "s"]);
  }
}
for (const [file, seconds] of specSeconds) measured.set(file, [Math.max(1, Math.round(seconds)), 0]);
if (measured.size === 0) throw new Error(`no node lane times in ${path.relative(root, LOGS)}: run npm test first`);

const table = { ...FILE_SECONDS };
for (const [file, [sim, stripe]] of measured) {
  const [oldSim, oldStripe] = table[file] ?? [0, 0];
  table[file] = [sim ?? oldSim, stripe ?? oldStripe];
}
const rows = Object.entries(table).sort(([a], [b]) => a.localeCompare(b));
for (const [file, [sim, stripe]] of [...rows].sort(([, a], [, b]) => b[0] + b[1] - a[0] - a[1]))
  console.log(`${file.padEnd(44)} sim ${String(sim).padStart(4)} s   stripe ${String(stripe).padStart(4)} s`);

const source = readFileSync(TABLE, "utf8");
const start = source.indexOf("export const FILE_SECONDS");
const end = source.indexOf("};", start) + 2;
const body = rows.map(([file, [sim, stripe]]) => `  "${file}": [${sim}, ${stripe}],`).join("\n");
const declaration = "export const FILE_SECONDS: Record<string, [number, number]> = {";
writeFileSync(TABLE, `${source.slice(0, start)}${declaration}\n${body}\n};${source.slice(end)}`);
console.log(`\n${path.relative(root, TABLE)}: ${measured.size} files measured, ${rows.length} in the table`);
