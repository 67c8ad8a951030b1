/**
 * `npm run reconcile [-- --since <time>] [--until <time>]`: compares the gateway's
 * charges with the app's over the window (by default the last 24 hours, a key's
 * lifetime), repairs what it can prove, stores and prints the rest; exits 1 when
 * anything is left. A time is an ISO date (2026-12-03T10:00:00Z) or an age (90m,
 * 6h, 2d). Works on the database `npm start` uses (DATABASE_ADMIN_URL, else
 * DATABASE_URL) and its gateway (the simulator on GATEWAY_PORT, or GATEWAY_URL,
 * or Stripe's settings); a gateway that is not this database's is refused (exit
 * 2), with nothing stored.
 */
import { parseArgs } from "node:util";
import { pointAtStart } from "./lib/config";

pointAtStart();
const { values } = parseArgs({ options: { since: { type: "string" }, until: { type: "string" } } });

function parseTime(value: string, name: string): Date {
  const age = /^(\d+)(m|h|d)$/.exec(value);
  if (age)
    return new Date(
      Date.now() - Number(age[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as "m" | "h" | "d"],
    );
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new Error(`--${name} must be an ISO time or an age such as 6h (got ${value})`);
  return date;
}

const DEFAULT_SINCE = "24h";
let since: Date;
let until: Date;
try {
  since = parseTime(values.since ?? DEFAULT_SINCE, "since");
  until = values.until ? parseTime(values.until, "until") : new Date();
} catch (error) {
  console.error(
    `${(error as Error).message}\nusage: npm run reconcile [-- --since <ISO time | 90m | 6h | 2d>] [--until <time>]`,
  );
  process.exit(2);
}

const { describeCounts, reconcileLedger } = await import("~/server/ledger/reconcile");
const { ForeignGatewayError } = await import("~/server/ledger/gatewayIdentity");
const { disconnectDatabase } = await import("~/server/db");
const result = await reconcileLedger({ since, until }).catch(async (error: unknown) => {
  if (!(error instanceof ForeignGatewayError)) throw error;
  console.error(`refused: ${error.message}`);
  await disconnectDatabase();
  process.exit(2);
});
console.log(
  `reconciled ${since.toISOString()} .. ${until.toISOString()}: ${describeCounts(result)}, ` +
    `repaired ${result.repaired}, ` +
    `mismatches ${result.findings.length} (run ${result.runId})`,
);
for (const f of result.findings) console.log(`  ${f.kind} ${f.subject}: ${JSON.stringify(f.evidence)}`);
// The repairs' key events (taken over, completed as reconciled) are buffered; write them before exiting.
await (await import("~/server/idempotency/maintenance")).flushEvents();
await disconnectDatabase();
process.exit(result.findings.length > 0 ? 1 : 0);
