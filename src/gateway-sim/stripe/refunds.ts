/**
 * Stripe's refunds in the simulator's Stripe mode, on the shared refund ledger (../refundLedger.ts):
 *
 *   POST /v1/refunds                      payment_intent, amount?, reason?, metadata (Idempotency-Key honoured)
 *   GET  /v1/refunds?payment_intent=      list, newest first (strongly consistent, as Stripe's list is)
 *   GET  /v1/refunds/:id                  retrieve
 */
import type * as mariadb from "mariadb";
import { metadataOf, refundLedger, type ChargeSource, type RefundRow } from "../refundLedger";
import { apiError, invalidRequest, resourceMissing, StripeHttpError } from "./errors";
import { createRefundParams, refundListParams, type Params } from "./params";
import type { Announce } from "../webhooks";
import { sleep } from "../http";

type Answer = { status: number; body: string };

export function refundJson(row: RefundRow) {
  return {
    id: row.id,
    object: "refund",
    amount: row.amount,
    currency: row.currency,
    payment_intent: row.charge_ref,
    status: "succeeded",
    reason: null,
    metadata: metadataOf(row) ?? {},
    created: Math.floor(new Date(row.created_at).getTime() / 1000),
  };
}

/** A refund made, reported (in Stripe's shape, whichever protocol made it) when its answer would come. */
export function announceRefund(announce: Announce, row: RefundRow, behaviour: { kind: string; delayMs?: number }) {
  const delay = behaviour.kind === "succeed" ? (behaviour.delayMs ?? 0) : 0;
  announce("refund.updated", refundJson(row), new Date(Date.now() + delay));
}

const intents: ChargeSource = {
  async lock(conn, id) {
    const [row] = (await conn.query(
      "SELECT amount, currency, payment_method, status FROM sim_payment_intents WHERE id = ? FOR UPDATE",
      [id],
    )) as { amount: number; currency: string; payment_method: string; status: string }[];
    if (row?.status !== "succeeded") return null;
    return { amount: row.amount, currency: row.currency, card: row.payment_method };
  },
};

const ok = (body: unknown): Answer => ({ status: 200, body: JSON.stringify(body) });

export function stripeRefunds(pool: mariadb.Pool, announce: Announce) {
  const ledger = refundLedger(pool);

  /** Runs a refund under a key this request holds (api.ts's idempotency); says whether to save its answer. */
  async function create(params: Params, key: string | null): Promise<{ answer: Answer; save: boolean }> {
    const input = createRefundParams(params);
    const result = await ledger.refund(
      {
        chargeRef: input.paymentIntent,
        amount: input.amount,
        key: null,
        hash: null,
        metadata: input.metadata,
        notAfter: null,
      },
      intents,
    );
    switch (result.kind) {
      case "no_charge":
        throw resourceMissing("PaymentIntent", input.paymentIntent, "payment_intent");
      case "too_large":
        throw result.left === 0
          ? invalidRequest(`Charge for ${input.paymentIntent} has already been refunded.`, {
              code: "charge_already_refunded",
            })
          : invalidRequest(`Refund amount is greater than what is left (${result.left}).`, {
              code: "amount_too_large",
              param: "amount",
            });
      case "error":
        return { answer: { status: 500, body: JSON.stringify({ error: apiError().body }) }, save: true };
      case "mismatch":
      case "expired":
        throw new Error(`unexpected ${result.kind} without a ledger key`); // keys are api.ts's here
      case "refunded":
      case "replay":
        if (result.kind === "refunded") announceRefund(announce, result.row, result.behaviour);
        if (result.behaviour.kind === "refund_then_error") {
          return { answer: { status: 500, body: JSON.stringify({ error: apiError().body }) }, save: key !== null };
        }
        if (result.behaviour.kind === "succeed" && result.behaviour.delayMs > 0) await sleep(result.behaviour.delayMs);
        return { answer: ok(refundJson(result.row)), save: true };
    }
  }

  async function list(query: Params): Promise<Answer> {
    const opts = refundListParams(query);
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.paymentIntent) {
      where.push("charge_ref = ?");
      args.push(opts.paymentIntent);
    }
    for (const [name, op] of [
      ["gt", ">"],
      ["gte", ">="],
      ["lt", "<"],
      ["lte", "<="],
    ] as const) {
      if (opts.created[name] === undefined) continue;
      where.push(`created_at ${op} FROM_UNIXTIME(?)`);
      args.push(opts.created[name]);
    }
    if (opts.startingAfter) {
      const [after] = (await pool.query("SELECT seq FROM sim_refunds WHERE id = ?", [
        opts.startingAfter,
      ])) as RefundRow[];
      if (!after) throw resourceMissing("refund", opts.startingAfter, "starting_after");
      where.push("seq < ?");
      args.push(after.seq);
    }
    const filter = where.length ? `WHERE ${where.join(" AND ")}` : "";
    const rows = (await pool.query(`SELECT * FROM sim_refunds ${filter} ORDER BY seq DESC LIMIT ?`, [
      ...args,
      opts.limit + 1,
    ])) as RefundRow[];
    const data = rows.slice(0, opts.limit).map(refundJson);
    return ok({ object: "list", url: "/v1/refunds", has_more: rows.length > opts.limit, data });
  }

  async function retrieve(id: string): Promise<Answer> {
    const [row] = (await pool.query("SELECT * FROM sim_refunds WHERE id = ?", [id])) as RefundRow[];
    if (!row) throw resourceMissing("refund", id, "id");
    return ok(refundJson(row));
  }

  return { create, list, retrieve };
}

export const isRefundPath = (url: URL) => url.pathname === "/v1/refunds" || url.pathname.startsWith("/v1/refunds/");

export { StripeHttpError };
