/**
 * Reading what the simulator charged straight from its tables, for tests and
 * benchmarks: the money that really moved, whichever protocol took it. With
 * GATEWAY=sim charges are rows of sim_charges; with GATEWAY=stripe they are
 * PaymentIntents (declined ones included, as the simulator's declines are rows
 * too), and the client's customer reference is in their metadata.
 */
import type * as mariadb from "mariadb";

export type GatewayKind = "sim" | "stripe";

const SOURCE: Record<GatewayKind, { table: string; customer: string }> = {
  sim: { table: "sim_charges", customer: "customer_id" },
  stripe: { table: "sim_payment_intents", customer: "JSON_UNQUOTE(JSON_EXTRACT(metadata, '$.customer_id'))" },
};

/** The charges made for one customer: their gateway ids and the key each was made under. */
export function chargesOfCustomer(db: mariadb.Pool | mariadb.Connection, gateway: GatewayKind, customerId: string) {
  const { table, customer } = SOURCE[gateway];
  return db.query(`SELECT id, idempotency_key FROM ${table} WHERE ${customer} = ?`, [customerId]) as Promise<
    { id: string; idempotency_key: string }[]
  >;
}

/** How many charges each customer whose reference starts with `prefix` got. */
export async function chargesPerCustomer(db: mariadb.Pool | mariadb.Connection, gateway: GatewayKind, prefix: string) {
  const { table, customer } = SOURCE[gateway];
  const rows = (await db.query(`SELECT COUNT(*) AS n FROM ${table} WHERE ${customer} LIKE ? GROUP BY ${customer}`, [
    `${prefix}%`,
  ])) as { n: bigint }[];
  return rows.map((r) => Number(r.n));
}

/** Deletes charges by gateway id (tests that planted charges the app never made undo them with this). */
export async function removeCharges(db: mariadb.Pool | mariadb.Connection, gateway: GatewayKind, ids: string[]) {
  if (ids.length === 0) return;
  await db.query(`DELETE FROM ${SOURCE[gateway].table} WHERE id IN (?)`, [ids]);
}

/** Every charge for the customers whose reference starts with `prefix`: its gateway id and customer. */
export function chargesOfCustomersLike(db: mariadb.Pool | mariadb.Connection, gateway: GatewayKind, prefix: string) {
  const { table, customer } = SOURCE[gateway];
  return db.query(`SELECT id, ${customer} AS customerId FROM ${table} WHERE ${customer} LIKE ?`, [
    `${prefix}%`,
  ]) as Promise<{ id: string; customerId: string }[]>;
}

/** The refunds the simulator made of one charge (gateway id: a sim charge or a PaymentIntent), oldest first. */
export function refundsOfCharge(db: mariadb.Pool | mariadb.Connection, gatewayChargeId: string) {
  return db.query("SELECT id, idempotency_key, amount, metadata FROM sim_refunds WHERE charge_ref = ? ORDER BY seq", [
    gatewayChargeId,
  ]) as Promise<{ id: string; idempotency_key: string | null; amount: number; metadata: unknown }[]>;
}
