/**
 * Who this simulated provider is: an account id made once with its database and kept in it, as a real provider's
 * account is its own. The app's reconciliation compares it with the one it first met (ledger/gatewayIdentity.ts),
 * so that a reconciliation pointed at another stack's gateway refuses instead of reporting that stack's money as
 * this one's. Served as GET /v1/identity (the simulator's protocol) and GET /v1/account (Stripe's, `acct_...`).
 */
import { randomBytes } from "node:crypto";
import type * as mariadb from "mariadb";

export const IDENTITY_SCHEMA = `CREATE TABLE IF NOT EXISTS sim_identity (
  id VARCHAR(40) NOT NULL PRIMARY KEY
)`;

/** The account id, made at the first start (of concurrent first starts, one insert wins). */
export async function ensureIdentity(conn: mariadb.Connection): Promise<string> {
  await conn.query(IDENTITY_SCHEMA);
  await conn.query("INSERT INTO sim_identity (id) SELECT ? FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM sim_identity)", [
    `acct_${randomBytes(12).toString("hex")}`,
  ]);
  const [row] = (await conn.query("SELECT id FROM sim_identity LIMIT 1")) as { id: string }[];
  return row!.id;
}
