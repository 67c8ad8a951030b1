/**
 * PaymentIntents as the simulator keeps them (table sim_payment_intents) and as
 * Stripe renders them: the subset of fields the adapter reads, plus enough of
 * the rest (object, livemode, client_secret, ...) to look like the real thing.
 */
import { createHash, randomBytes } from "node:crypto";
import type * as mariadb from "mariadb";
import { resourceMissing } from "./errors";
import type { CreatedRange } from "./params";
import type { SearchClause } from "./searchQuery";

export type PaymentError = { type: "card_error"; code: string; decline_code?: string; message: string };

export type IntentRow = {
  id: string;
  idempotency_key: string | null;
  amount: number;
  currency: string;
  payment_method: string;
  status: "succeeded" | "requires_payment_method";
  latest_charge: string | null;
  last_payment_error: string | PaymentError | null;
  metadata: string | Record<string, string>;
  description: string | null;
  created: number;
  created_at: Date;
  seq?: number | bigint;
};

export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;

const json = <T>(value: string | T): T => (typeof value === "string" ? (JSON.parse(value) as T) : value);

function chargeJson(row: IntentRow) {
  const error = row.last_payment_error ? json<PaymentError>(row.last_payment_error) : null;
  const paid = row.status === "succeeded";
  return {
    id: row.latest_charge,
    object: "charge",
    amount: row.amount,
    amount_captured: paid ? row.amount : 0,
    captured: paid,
    created: row.created,
    currency: row.currency,
    failure_code: error?.code ?? null,
    failure_message: error?.message ?? null,
    livemode: false,
    metadata: json<Record<string, string>>(row.metadata),
    outcome: { type: paid ? "authorized" : "issuer_declined", reason: error?.decline_code ?? null },
    paid,
    payment_intent: row.id,
    payment_method: row.payment_method,
    status: paid ? "succeeded" : "failed",
  };
}

export function intentJson(row: IntentRow, expand: string[] = []) {
  const succeeded = row.status === "succeeded";
  const error = row.last_payment_error ? json<PaymentError>(row.last_payment_error) : null;
  return {
    id: row.id,
    object: "payment_intent",
    amount: row.amount,
    amount_capturable: 0,
    amount_received: succeeded ? row.amount : 0,
    capture_method: "automatic_async",
    client_secret: `${row.id}_secret_${createHash("sha256").update(row.id).digest("hex").slice(0, 24)}`,
    confirmation_method: "automatic",
    created: row.created,
    currency: row.currency,
    customer: null,
    description: row.description,
    last_payment_error: error && {
      ...error,
      payment_method: { id: row.payment_method, object: "payment_method", type: "card" },
    },
    latest_charge: row.latest_charge && expand.includes("latest_charge") ? chargeJson(row) : row.latest_charge,
    livemode: false,
    metadata: json<Record<string, string>>(row.metadata),
    payment_method: row.payment_method,
    payment_method_types: ["card"],
    status: row.status,
  };
}

export function intentStore(pool: mariadb.Pool) {
  async function find(id: string, param: string): Promise<IntentRow> {
    const [row] = (await pool.query("SELECT * FROM sim_payment_intents WHERE id = ?", [id])) as IntentRow[];
    if (!row) throw resourceMissing("payment_intent", id, param);
    return row;
  }

  return {
    find,

    /** Records the intent: from here on the money has moved (or the decline is final). */
    async insert(row: Omit<IntentRow, "created" | "seq">, searchLagMs: number) {
      const created = Math.floor(row.created_at.getTime() / 1000);
      await pool.query(
        `INSERT INTO sim_payment_intents (id, idempotency_key, amount, currency, payment_method, status, latest_charge,
           last_payment_error, metadata, description, created, created_at, searchable_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          row.id,
          row.idempotency_key,
          row.amount,
          row.currency,
          row.payment_method,
          row.status,
          row.latest_charge,
          row.last_payment_error ? JSON.stringify(row.last_payment_error) : null,
          JSON.stringify(row.metadata),
          row.description,
          created,
          row.created_at,
          new Date(row.created_at.getTime() + searchLagMs),
        ],
      );
      return { ...row, created };
    },

    /** Only what the search index has caught up with: an intent is invisible until its searchable_at. */
    async search(clauses: SearchClause[], { limit, beforeSeq }: { limit: number; beforeSeq?: number }) {
      const where = ["searchable_at <= ?"];
      const args: unknown[] = [new Date()];
      for (const clause of clauses) {
        if (clause.field === "status") {
          where.push("status = ?");
          args.push(clause.value);
        } else {
          where.push("JSON_UNQUOTE(JSON_EXTRACT(metadata, ?)) = ?");
          args.push(`$."${clause.key}"`, clause.value);
        }
      }
      if (beforeSeq !== undefined) {
        where.push("seq < ?");
        args.push(beforeSeq);
      }
      const rows = (await pool.query(
        `SELECT * FROM sim_payment_intents WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT ?`,
        [...args, limit + 1],
      )) as IntentRow[];
      const page = rows.slice(0, limit);
      return { page, nextPage: rows.length > limit ? `seq_${page.at(-1)!.seq}` : null };
    },

    /**
     * Stripe's list order, newest first. `startingAfter` pages towards older
     * intents; `endingBefore` returns the `limit` intents just newer than the
     * named one (still newest first), which is how a list is walked forwards.
     */
    async list(opts: { created: CreatedRange; limit: number; startingAfter?: string; endingBefore?: string }) {
      const where: string[] = [];
      const args: unknown[] = [];
      const bounds = [
        ["gt", ">"],
        ["gte", ">="],
        ["lt", "<"],
        ["lte", "<="],
      ] as const;
      for (const [name, op] of bounds) {
        if (opts.created[name] === undefined) continue;
        where.push(`created ${op} ?`);
        args.push(opts.created[name]);
      }
      let order = "DESC";
      if (opts.startingAfter) {
        where.push("seq < ?");
        args.push((await find(opts.startingAfter, "starting_after")).seq);
      } else if (opts.endingBefore) {
        where.push("seq > ?");
        args.push((await find(opts.endingBefore, "ending_before")).seq);
        order = "ASC";
      }
      const filter = where.length ? `WHERE ${where.join(" AND ")}` : "";
      const sql = `SELECT * FROM sim_payment_intents ${filter} ORDER BY seq ${order} LIMIT ?`;
      const rows = (await pool.query(sql, [...args, opts.limit + 1])) as IntentRow[];
      const page = rows.slice(0, opts.limit);
      return { page: order === "ASC" ? page.reverse() : page, hasMore: rows.length > opts.limit };
    },
  };
}
