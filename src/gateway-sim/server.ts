/**
 * A stand-in payment provider, run as its own process with its own tables, so
 * that what it charged survives the app being killed. It keeps its own
 * idempotency: one charge per Idempotency-Key, forever the same answer.
 *
 *   POST /v1/charges                              (Idempotency-Key required; Charge-Not-After optional)
 *   GET  /v1/charges/by-idempotency-key/:key         (404 names a refusal under the key, if any)
 *   GET  /v1/charges?created_gte=&created_lt=&starting_after=&limit=   (the charge list, oldest first)
 *   /v1/refunds                                   (refunds of its charges, see ./refunds.ts)
 *   GET  /v1/identity                             (its account id, ./identity.ts)
 *   GET  /health
 *
 * It also speaks the part of Stripe's API that the Stripe adapter uses
 * (/v1/payment_intents, see ./stripe/api.ts), on the same port, so one
 * simulator serves either gateway setting.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import * as mariadb from "mariadb";
import { z } from "zod";
import { mysqlConnectionOptions } from "../lib/mysqlUrl";
import { behaviourFor } from "./behaviour";
import { ensureIdentity } from "./identity";
import { REFUNDS_CHARGE_INDEX_WITH_AMOUNT, REFUNDS_TABLE } from "./refundLedger";
import { refundsApi } from "./refunds";
import { noteRefusal, REFUSALS_SCHEMA, REQUEST_EXPIRED, refusalOf } from "./refusals";
import { stripeApi } from "./stripe/api";
import { ensureStripeSchema } from "./stripe/schema";
import { WEBHOOK_ENDPOINTS_TABLE, webhooksApi } from "./webhooks";
import { readBody, send, sleep } from "./http";

const config = z
  .object({
    GATEWAY_DATABASE_URL: z.string().url().default("mysql://root@127.0.0.1:3306/charges_gateway"),
    GATEWAY_PORT: z.coerce.number().int().default(4010),
    /** Stripe mode: how long a new PaymentIntent stays invisible to search. */
    GATEWAY_SEARCH_LAG_MS: z.coerce.number().int().min(0).default(1_000),
  })
  .parse(process.env);

const SCHEMA = `CREATE TABLE IF NOT EXISTS sim_charges (
  id VARCHAR(32) NOT NULL PRIMARY KEY,
  idempotency_key VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  request_hash CHAR(64) NOT NULL,
  amount_cents INT NOT NULL,
  currency CHAR(3) NOT NULL,
  customer_id VARCHAR(64) NULL,
  card_token VARCHAR(64) NOT NULL,
  status ENUM('succeeded', 'declined') NOT NULL,
  decline_code VARCHAR(64) NULL,
  message VARCHAR(255) NULL,
  created_at DATETIME(6) NOT NULL,
  respond_after DATETIME(6) NOT NULL,
  metadata JSON NULL,
  seq BIGINT NOT NULL AUTO_INCREMENT,
  UNIQUE KEY sim_charges_idempotency_key (idempotency_key),
  UNIQUE KEY sim_charges_seq (seq),
  KEY sim_charges_created (created_at, seq)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

const metadataSchema = z.object({
  request_id: z.string().max(32),
  api_client_id: z.string().max(32),
  idempotency_key: z.string().max(64).nullable(),
});

const bodySchema = z.object({
  amount_cents: z.number().int().positive(),
  currency: z.string().length(3),
  card_token: z.string().min(1).max(64),
  customer_id: z.string().max(64).nullable().optional(),
  metadata: metadataSchema.optional(),
});

type Row = {
  id: string;
  idempotency_key: string;
  request_hash: string;
  amount_cents: number;
  currency: string;
  customer_id: string | null;
  status: "succeeded" | "declined";
  decline_code: string | null;
  message: string | null;
  respond_after: Date;
  created_at: Date;
  metadata: string | z.infer<typeof metadataSchema> | null;
  seq?: number | bigint;
};

function databaseOptions(url: string): mariadb.PoolConfig {
  return { ...mysqlConnectionOptions(url), connectionLimit: 20, timezone: "Z" };
}

/** Columns added after the first release of the simulator, for gateway databases made before them. */
const LATER_COLUMNS: Record<string, string> = {
  metadata: "ALTER TABLE sim_charges ADD COLUMN metadata JSON NULL",
  seq:
    "ALTER TABLE sim_charges ADD COLUMN seq BIGINT NOT NULL AUTO_INCREMENT, " +
    "ADD UNIQUE KEY sim_charges_seq (seq), ADD KEY sim_charges_created (created_at, seq)",
};

async function ensureSchema(url: string) {
  const { database, ...serverOptions } = databaseOptions(url);
  const name = String(database).replaceAll("`", "");
  const conn = await mariadb.createConnection(serverOptions);
  await conn.query(`CREATE DATABASE IF NOT EXISTS \`${name}\``);
  await conn.query(`USE \`${name}\``);
  await conn.query(SCHEMA);
  await conn.query(REFUNDS_TABLE);
  await conn.query(REFUSALS_SCHEMA);
  await conn.query(WEBHOOK_ENDPOINTS_TABLE);
  const columns: { COLUMN_NAME: string }[] = await conn.query(
    "SELECT COLUMN_NAME FROM information_schema.columns WHERE table_schema = ? AND table_name = 'sim_charges'",
    [name],
  );
  const have = new Set(columns.map((c) => c.COLUMN_NAME));
  for (const [column, ddl] of Object.entries(LATER_COLUMNS)) if (!have.has(column)) await conn.query(ddl);
  const [covering] = await conn.query(
    `SELECT 1 FROM information_schema.statistics
      WHERE table_schema = ? AND table_name = 'sim_refunds' AND index_name = 'sim_refunds_charge'
        AND column_name = 'amount'`,
    [name],
  );
  if (!covering) await conn.query(REFUNDS_CHARGE_INDEX_WITH_AMOUNT);
  await ensureStripeSchema(conn);
  const identity = await ensureIdentity(conn);
  await conn.end();
  return identity;
}

const identity = await ensureSchema(config.GATEWAY_DATABASE_URL);
const pool = mariadb.createPool(databaseOptions(config.GATEWAY_DATABASE_URL));
const webhooks = webhooksApi(pool);
const stripe = stripeApi(pool, {
  searchLagMs: config.GATEWAY_SEARCH_LAG_MS,
  accountId: identity,
  announce: webhooks.announce,
});
const refunds = refundsApi(pool, webhooks.announce);

function toWire(row: Row) {
  return {
    id: row.id,
    status: row.status,
    amount_cents: row.amount_cents,
    currency: row.currency,
    customer_id: row.customer_id,
    decline_code: row.decline_code,
    message: row.message,
    idempotency_key: row.idempotency_key,
    created_at: new Date(row.created_at).toISOString(),
    metadata: typeof row.metadata === "string" ? (JSON.parse(row.metadata) as unknown) : row.metadata,
  };
}

/** A charge as a webhook reports it: a PaymentIntent's shape, as Stripe's events carry one. */
function announceCharge(row: Row) {
  const succeeded = row.status === "succeeded";
  webhooks.announce(
    succeeded ? "payment_intent.succeeded" : "payment_intent.payment_failed",
    {
      id: row.id,
      object: "payment_intent",
      amount: row.amount_cents,
      currency: row.currency,
      status: succeeded ? "succeeded" : "requires_payment_method",
      metadata: toWire(row).metadata ?? {},
    },
    row.respond_after,
  );
}

/**
 * A locking read: a charge whose INSERT passed its deadline check but has not committed yet holds its row, and
 * this waits for it instead of answering "no charge" while it is about to land (insertCharge).
 */
async function findByKey(key: string): Promise<Row | undefined> {
  const rows: Row[] = await pool.query("SELECT * FROM sim_charges WHERE idempotency_key = ? LOCK IN SHARE MODE", [key]);
  return rows[0];
}

/**
 * Inserts the charge unless its not-after time has passed by the time the row is in. The check runs after the
 * INSERT, in its transaction: an INSERT held up by a lock or a stalled disk is rolled back when it comes through
 * late, and charges nothing (a check before it let the charge land after a sweep had written it off). The
 * refusal is noted before the rollback releases the row, so a lookup that waited on it sees the refusal.
 */
async function insertCharge(key: string, values: unknown[], notAfter: number | null): Promise<"inserted" | "late"> {
  const conn = await pool.getConnection();
  try {
    await conn.beginTransaction();
    await conn.query(
      `INSERT INTO sim_charges (id, idempotency_key, request_hash, amount_cents, currency, customer_id, card_token,
         status, decline_code, message, created_at, respond_after, metadata)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      values,
    );
    if (notAfter !== null && Date.now() > notAfter) {
      await noteRefusal(pool, key, REQUEST_EXPIRED.code);
      await conn.rollback();
      return "late";
    }
    await conn.commit();
    return "inserted";
  } catch (error) {
    await conn.rollback().catch(() => {});
    throw error;
  } finally {
    await conn.release();
  }
}

const refuseLate = async (res: ServerResponse, key: string) => {
  await noteRefusal(pool, key, REQUEST_EXPIRED.code);
  send(res, 410, { error: REQUEST_EXPIRED });
};

/** Answers when the charge is "done": a slow card answers late, whoever asks. */
async function answer(res: ServerResponse, row: Row) {
  const wait = new Date(row.respond_after).getTime() - Date.now();
  if (wait > 0) await sleep(wait);
  send(res, row.status === "succeeded" ? 200 : 402, toWire(row));
}

async function createCharge(req: IncomingMessage, res: ServerResponse) {
  const key = req.headers["idempotency-key"];
  if (typeof key !== "string" || key.length === 0 || key.length > 128) {
    return send(res, 400, { error: { code: "idempotency_key_required", message: "Idempotency-Key is required" } });
  }
  const raw = await readBody(req);
  let parsed: z.infer<typeof bodySchema>;
  try {
    parsed = bodySchema.parse(JSON.parse(raw));
  } catch (error) {
    return send(res, 400, { error: { code: "invalid_request", message: String(error) } });
  }
  const hash = createHash("sha256").update(raw).digest("hex");
  const behaviour = behaviourFor(parsed.card_token);
  if (behaviour.kind === "succeed" && behaviour.processAfterMs) await sleep(behaviour.processAfterMs);
  // A request carried out after its not-after time creates nothing: its sender has given up on it, and may
  // have written the operation off as never charged. Under a key already charged it is a replay, as ever.
  const header = req.headers["charge-not-after"];
  const notAfter = typeof header === "string" ? new Date(header).getTime() : null;
  if (notAfter !== null && Date.now() > notAfter) {
    const existing = await findByKey(key);
    if (existing && existing.request_hash === hash) return answer(res, existing);
    return refuseLate(res, key);
  }
  if (behaviour.kind === "error") {
    return send(res, 500, { error: { code: "processing_error", message: "Simulated processor failure" } });
  }

  const now = Date.now();
  const row: Row = {
    id: `gw_${randomBytes(12).toString("hex")}`,
    idempotency_key: key,
    request_hash: hash,
    amount_cents: parsed.amount_cents,
    currency: parsed.currency,
    customer_id: parsed.customer_id ?? null,
    status: behaviour.kind === "decline" ? "declined" : "succeeded",
    decline_code: behaviour.kind === "decline" ? behaviour.code : null,
    message: behaviour.kind === "decline" ? behaviour.message : null,
    respond_after: new Date(now + (behaviour.kind === "succeed" ? behaviour.delayMs : 0)),
    created_at: new Date(now),
    metadata: parsed.metadata ?? null,
  };
  try {
    // The money moves here, before the (possibly slow) answer: a caller that
    // gives up waiting has still been charged.
    const inserted = await insertCharge(
      key,
      [
        row.id,
        key,
        hash,
        row.amount_cents,
        row.currency,
        row.customer_id,
        parsed.card_token,
        row.status,
        row.decline_code,
        row.message,
        row.created_at,
        row.respond_after,
        row.metadata ? JSON.stringify(row.metadata) : null,
      ],
      notAfter,
    );
    if (inserted === "late") return send(res, 410, { error: REQUEST_EXPIRED });
    announceCharge(row);
  } catch (error) {
    if ((error as { errno?: number }).errno !== 1062) throw error;
    const existing = await findByKey(key);
    if (!existing) return send(res, 500, { error: { code: "processing_error", message: "Lost a race; retry" } });
    if (existing.request_hash !== hash) {
      return send(res, 422, { error: { code: "idempotency_key_reused", message: "Key used with another payload" } });
    }
    return answer(res, existing);
  }
  if (behaviour.kind === "charge_then_error") {
    return send(res, 500, {
      error: { code: "processing_error", message: "Simulated failure after the charge was made" },
    });
  }
  return answer(res, row);
}

/** The charge under a key; without one, 404, naming the refusal if a request under the key was refused. */
async function lookUp(key: string, res: ServerResponse) {
  const row = await findByKey(key);
  if (row) return send(res, 200, toWire(row));
  const refusal = await refusalOf(pool, key);
  const refused = refusal && { code: refusal.code, at: new Date(refusal.last_at).toISOString(), times: refusal.times };
  return send(res, 404, { error: { code: "not_found", message: "No charge" }, ...(refused && { refused }) });
}

const LIST_MAX = 100;

/** The charge list of a time window, oldest first; the cursor is the last row's seq. */
async function listCharges(url: URL, res: ServerResponse) {
  const since = new Date(url.searchParams.get("created_gte") ?? 0);
  const until = new Date(url.searchParams.get("created_lt") ?? Date.now() + 86_400_000);
  const after = Number(url.searchParams.get("starting_after") ?? 0);
  const limit = Math.min(LIST_MAX, Math.max(1, Number(url.searchParams.get("limit") ?? LIST_MAX)));
  if ([since.getTime(), until.getTime(), after, limit].some((v) => !Number.isFinite(v))) {
    return send(res, 400, {
      error: { code: "invalid_request", message: "created_gte, created_lt, starting_after, limit" },
    });
  }
  // Paging by seq inside the window returns each of its rows exactly once, and
  // seq follows creation closely enough to read as "oldest first".
  const rows: Row[] = await pool.query(
    "SELECT * FROM sim_charges WHERE created_at >= ? AND created_at < ? AND seq > ? ORDER BY seq LIMIT ?",
    [since, until, after, limit + 1],
  );
  const page = rows.slice(0, limit);
  send(res, 200, {
    data: page.map(toWire),
    has_more: rows.length > limit,
    next_cursor: rows.length > limit ? String(page.at(-1)!.seq) : null,
  });
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://gateway");
  const byKey = /^\/v1\/charges\/by-idempotency-key\/(.+)$/.exec(url.pathname);
  const handle = async () => {
    if (await webhooks.handle(req, res, url)) return;
    if (await stripe(req, res, url)) return;
    if (await refunds(req, res, url)) return;
    if (req.method === "POST" && url.pathname === "/v1/charges") return createCharge(req, res);
    if (req.method === "GET" && url.pathname === "/v1/charges") return listCharges(url, res);
    if (req.method === "GET" && byKey) return lookUp(decodeURIComponent(byKey[1]!), res);
    if (req.method === "GET" && url.pathname === "/v1/identity") return send(res, 200, { id: identity });
    if (req.method === "GET" && url.pathname === "/health") {
      await pool.query("SELECT 1");
      return send(res, 200, { ok: true });
    }
    return send(res, 404, { error: { code: "not_found", message: "No such endpoint" } });
  };
  handle().catch((error) => {
    console.error("gateway-sim:", error);
    if (!res.headersSent) send(res, 500, { error: { code: "processing_error", message: "Internal error" } });
  });
});

server.listen(config.GATEWAY_PORT, "127.0.0.1", () => {
  console.log(`simulated gateway listening on http://127.0.0.1:${config.GATEWAY_PORT}`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    server.close();
    void pool.end().finally(() => process.exit(0));
  });
}
