/**
 * The simulator's own refund protocol, next to its charges:
 *
 *   POST /v1/refunds                              { charge, amount_cents?, metadata? } (Idempotency-Key required;
 *                                                 Charge-Not-After optional, as for charges)
 *   GET  /v1/refunds/by-idempotency-key/:key
 *   GET  /v1/refunds?created_gte=&created_lt=&starting_after=&limit=   (the refund list, oldest first)
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type * as mariadb from "mariadb";
import { z } from "zod";
import { metadataOf, refundLedger, type ChargeSource, type RefundRow } from "./refundLedger";
import { announceRefund } from "./stripe/refunds";
import type { Announce } from "./webhooks";
import { readBody, send, sleep } from "./http";

const bodySchema = z.object({
  charge: z.string().min(1).max(40),
  amount_cents: z.number().int().positive().nullable().optional(),
  metadata: z.record(z.string(), z.string().nullable()).optional(),
});

const fail = (res: ServerResponse, status: number, code: string, message: string) =>
  send(res, status, { error: { code, message } });

function toWire(row: RefundRow) {
  return {
    id: row.id,
    charge: row.charge_ref,
    amount_cents: row.amount,
    currency: row.currency,
    status: "succeeded",
    idempotency_key: row.idempotency_key,
    created_at: new Date(row.created_at).toISOString(),
    metadata: metadataOf(row),
  };
}

const simCharges: ChargeSource = {
  async lock(conn, id) {
    const [row] = (await conn.query(
      "SELECT amount_cents, currency, card_token, status FROM sim_charges WHERE id = ? FOR UPDATE",
      [id],
    )) as { amount_cents: number; currency: string; card_token: string; status: string }[];
    if (row?.status !== "succeeded") return null;
    return { amount: row.amount_cents, currency: row.currency, card: row.card_token };
  },
};

const LIST_MAX = 100;

/** Answers a request under /v1/refunds; false for any other path. */
export function refundsApi(pool: mariadb.Pool, announce: Announce) {
  const ledger = refundLedger(pool);

  async function create(req: IncomingMessage, res: ServerResponse) {
    const key = req.headers["idempotency-key"];
    if (typeof key !== "string" || key.length === 0 || key.length > 128) {
      return fail(res, 400, "idempotency_key_required", "Idempotency-Key is required");
    }
    const raw = await readBody(req);
    let body: z.infer<typeof bodySchema>;
    try {
      body = bodySchema.parse(JSON.parse(raw));
    } catch (error) {
      return fail(res, 400, "invalid_request", String(error));
    }
    const notAfter = req.headers["charge-not-after"];
    const result = await ledger.refund(
      {
        chargeRef: body.charge,
        amount: body.amount_cents ?? null,
        key,
        hash: createHash("sha256").update(raw).digest("hex"),
        metadata: body.metadata ?? null,
        notAfter: typeof notAfter === "string" ? new Date(notAfter) : null,
      },
      simCharges,
    );
    switch (result.kind) {
      case "no_charge":
        return fail(res, 404, "charge_not_found", "No succeeded charge with this id");
      case "mismatch":
        return fail(res, 422, "idempotency_key_reused", "Key used with another payload");
      case "expired":
        return fail(res, 410, "request_expired", "Carried out after its Charge-Not-After time; nothing was refunded");
      case "too_large":
        return fail(res, 400, "amount_too_large", `At most ${result.left} is left to refund`);
      case "error":
        return fail(res, 500, "processing_error", "Simulated refund failure; nothing was refunded");
      case "refunded":
      case "replay":
        if (result.kind === "refunded") announceRefund(announce, result.row, result.behaviour);
        if (result.kind === "refunded" && result.behaviour.kind === "refund_then_error") {
          return fail(res, 500, "processing_error", "Simulated failure after the refund was made");
        }
        if (result.behaviour.kind === "succeed" && result.behaviour.delayMs > 0) {
          await sleep(result.behaviour.delayMs);
        }
        return send(res, 200, toWire(result.row));
    }
  }

  async function list(url: URL, res: ServerResponse) {
    const since = new Date(url.searchParams.get("created_gte") ?? 0);
    const until = new Date(url.searchParams.get("created_lt") ?? Date.now() + 86_400_000);
    const after = Number(url.searchParams.get("starting_after") ?? 0);
    const limit = Math.min(LIST_MAX, Math.max(1, Number(url.searchParams.get("limit") ?? LIST_MAX)));
    if ([since.getTime(), until.getTime(), after, limit].some((v) => !Number.isFinite(v))) {
      return fail(res, 400, "invalid_request", "created_gte, created_lt, starting_after, limit");
    }
    const rows = await ledger.window(since, until, after, limit);
    const page = rows.slice(0, limit);
    send(res, 200, {
      data: page.map(toWire),
      next_cursor: rows.length > limit ? String(page.at(-1)!.seq) : null,
    });
  }

  return async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (!url.pathname.startsWith("/v1/refunds")) return false;
    const byKey = /^\/v1\/refunds\/by-idempotency-key\/(.+)$/.exec(url.pathname);
    if (req.method === "POST" && url.pathname === "/v1/refunds") await create(req, res);
    else if (req.method === "GET" && url.pathname === "/v1/refunds") await list(url, res);
    else if (req.method === "GET" && byKey) {
      const row = await ledger.byKey(decodeURIComponent(byKey[1]!));
      if (row) send(res, 200, toWire(row));
      else fail(res, 404, "not_found", "No refund");
    } else fail(res, 404, "not_found", "No such endpoint");
    return true;
  };
}
