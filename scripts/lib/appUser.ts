/**
 * The application's own database user, with only what the app's code does:
 * APP_GRANTS declares each table's privileges, and test/auditAndPrivileges.test.ts
 * compares the database's grants with it and checks every table is declared.
 * A table missing from the list gets nothing (its code fails loudly instead of
 * running with a guess). Migrations run as the admin user and are not the
 * app's: `_prisma_migrations` is not listed.
 */
import { randomBytes } from "node:crypto";
import * as mariadb from "mariadb";
import { connectionOptions, databaseName } from "./mariadbServer";

/** A table privilege, or UPDATE of some columns only (`UPDATE (a, b)`, columns in alphabetical order). */
type Privilege = "SELECT" | "INSERT" | "UPDATE" | "DELETE" | `UPDATE (${string})`;
const READ_ADD = ["SELECT", "INSERT"] as const;
const READ_ADD_CHANGE = ["SELECT", "INSERT", "UPDATE"] as const;
const ALL = ["SELECT", "INSERT", "UPDATE", "DELETE"] as const;

/**
 * What the code does to each table (INSERT ... ON DUPLICATE KEY UPDATE and Prisma's upsert need UPDATE).
 * Why each has more than SELECT and INSERT:
 */
export const APP_GRANTS: Record<string, readonly Privilege[]> = {
  // UPDATE: a client's own key-required switch (src/server/rollout/mode.ts). Clients are never deleted.
  api_clients: READ_ADD_CHANGE,
  // UPDATE: rotation's grace end, revocation (src/server/apiClients/manage.ts). Keys are never deleted.
  api_keys: READ_ADD_CHANGE,
  // Written once per charge (src/server/charges/chargeRows.ts); after that only what refunds move, under the
  // charge's row lock (src/server/refunds/holds.ts). The records' pruning sets idempotent_request_id NULL
  // through the foreign key, which needs no privilege of ours.
  charges: ["SELECT", "INSERT", "UPDATE (amount_refunded_cents, refund_held_cents)"],
  // Written once per refund (src/server/refunds/refundWork.ts).
  refunds: READ_ADD,
  // An in-flight refund's hold, deleted when its operation ends (src/server/refunds/holds.ts).
  refund_holds: ["SELECT", "INSERT", "DELETE"],
  // Support's notes on dashboard refunds: append-only (src/server/refunds/fromDashboard.ts).
  refund_notes: READ_ADD,
  // A person's dashboard refund before it is sent: audited from by its completion, counted for the limits;
  // UPDATE: an approval's decision (src/server/refunds/staffIntentions.ts). Never deleted.
  staff_refund_intentions: [
    "SELECT",
    "INSERT",
    "UPDATE (decided_at, decided_by_label, decided_by_staff_id, decision_note, status)",
  ],
  // A double charge's first dashboard refund: deleted when that refund is refused, taken over when it went stale
  // (src/server/refunds/pairGuard.ts).
  double_charge_claims: ALL,
  // Events: written with the money they report, never changed (src/server/events/write.ts).
  events: READ_ADD,
  // Endpoints: rotation, disabling and health (UPDATE), removal (DELETE) (src/server/webhooks).
  webhook_endpoints: ALL,
  // Deliveries: claimed and finished by dispatchers (src/server/webhooks/dispatcher.ts); never deleted.
  webhook_deliveries: READ_ADD_CHANGE,
  // Every attempt of a delivery, append-only.
  webhook_attempts: READ_ADD,
  // The lifecycle's claims, transitions, take-overs and pruning (src/server/idempotency/records.ts).
  idempotent_requests: ALL,
  // DELETE: pruned after 30 days (src/server/sweep/pruneExpired.ts).
  idempotency_key_reuses: ["SELECT", "INSERT", "DELETE"],
  // DELETE: pruned with the records (src/server/idempotency/events.ts).
  idempotency_events: ["SELECT", "INSERT", "DELETE"],
  // Counts added with ON DUPLICATE KEY UPDATE; the fold deletes the shards it summed (src/server/rollout).
  request_count_buckets: ALL,
  request_count_hours: READ_ADD_CHANGE,
  request_count_days: READ_ADD_CHANGE,
  // INSERT IGNORE only (src/server/customers/duplicates.ts).
  possible_duplicate_charges: READ_ADD,
  // The mode, the duplicates' watermark, the API keys' version: upserted, never deleted.
  settings: READ_ADD_CHANGE,
  // UPDATE: passwords, roles, disabling, second factors (src/server/staff). Staff are never deleted.
  staff_users: READ_ADD_CHANGE,
  // Sessions end by deletion (src/server/auth/session.ts).
  staff_sessions: ALL,
  // Append-only.
  audit_events: READ_ADD,
  // rate-limiter-flexible's store: counts go up, expire and are deleted.
  rate_limits: ALL,
  // DELETE: pruned after 30 days (src/server/sweep/pruneExpired.ts).
  sweep_runs: ALL,
  reconciliation_runs: ALL,
  // UPDATE: last seen, resolved by a run, closed by an engineer (written once: a trigger). Never deleted.
  ledger_mismatches: READ_ADD_CHANGE,
  // DELETE: pruned after 30 days (src/server/sweep/pruneExpired.ts); never changed (src/server/gatewayEvents).
  gateway_events: ["SELECT", "INSERT", "DELETE"],
};
const NOT_FOR_THE_APP = new Set(["_prisma_migrations"]);

const ident = (name: string) => `\`${name.replaceAll("`", "``")}\``;

/** `<database>_app`: one user per database, so parallel test slots never share one. */
export const appUserName = (adminUrl: string) => `${databaseName(adminUrl)}_app`.slice(0, 80);

/** Hosts the user may connect from: loopback for a local server, anywhere (with its password) otherwise. */
function hostsFor(adminUrl: string): string[] {
  const host = new URL(adminUrl).hostname;
  return ["127.0.0.1", "localhost", "[::1]"].includes(host) ? ["127.0.0.1", "localhost"] : ["%"];
}

/** The grants the app user gets on each table of the database, as SQL privilege lists. */
export async function appGrants(conn: mariadb.Connection, database: string): Promise<Map<string, string>> {
  const tables: { name: string }[] = await conn.query(
    "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'",
    [database],
  );
  const grants = new Map<string, string>();
  for (const { name } of tables) {
    if (NOT_FOR_THE_APP.has(name)) continue;
    const privileges = APP_GRANTS[name];
    if (privileges) grants.set(name, privileges.join(", "));
    else
      console.warn(`warning: table ${name} is not in APP_GRANTS (scripts/lib/appUser.ts): the app gets nothing on it`);
  }
  return grants;
}

/** Replaces whatever `user` was granted with exactly the app's grants on `database`. */
export async function grantAppPrivileges(conn: mariadb.Connection, database: string, user: string, hosts: string[]) {
  const grants = await appGrants(conn, database);
  for (const host of hosts) {
    await conn.query("REVOKE ALL PRIVILEGES, GRANT OPTION FROM ?@?", [user, host]);
    for (const [table, privileges] of grants) {
      await conn.query(`GRANT ${privileges} ON ${ident(database)}.${ident(table)} TO ?@?`, [user, host]);
    }
  }
}

/**
 * Creates (or re-keys) the app user of the admin URL's database, grants it the
 * app's privileges and returns the URL the app should connect with. The
 * password is new on every call, like the demo API key.
 */
export async function provisionAppUser(adminUrl: string): Promise<string> {
  const database = databaseName(adminUrl);
  const user = appUserName(adminUrl);
  const hosts = hostsFor(adminUrl);
  const password = randomBytes(24).toString("base64url");
  const conn = await mariadb.createConnection(connectionOptions(adminUrl));
  try {
    for (const host of hosts) {
      await conn.query("CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?", [user, host, password]);
      await conn.query("ALTER USER ?@? IDENTIFIED BY ?", [user, host, password]);
    }
    await grantAppPrivileges(conn, database, user, hosts);
  } finally {
    await conn.end();
  }
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.toString();
}
