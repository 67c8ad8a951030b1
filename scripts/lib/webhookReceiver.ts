/**
 * A merchant's webhook receiver, as docs/webhooks.md tells one to write it, run as a real HTTP server for the
 * tests (test/webhooks.test.ts) and the fault run (scripts/lib/faults/receivers.ts): it verifies each delivery
 * with the `standardwebhooks` package (the spec's own), then does its work and records the event id in ONE
 * transaction, where a unique index on the id makes a second delivery of the same event a no-op (answered 200,
 * processed once). Its tables are its own (a merchant's database). It can be told to misbehave (answer 500, be
 * slow, drop the connection, redirect, stop listening for a while) to test the dispatcher.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as mariadb from "mariadb";
import { Webhook } from "standardwebhooks";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";

/** A request's fate: answered at once, 500, after `slowMs` (then processed), socket destroyed, 302. */
export type Behaviour = "ok" | "fail" | "slow" | "drop" | "redirect" | { slowMs: number };

/** How long "slow" waits: past the test stack's WEBHOOK_TIMEOUT_MS. */
const SLOW_MS = 5_000;

export type Received = {
  at: number;
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  verified: boolean;
  /** Its signature did not verify with any of the receiver's secrets (answered 400). */
  badSignature: boolean;
  /** Verified, but its event was processed before: nothing done, answered 200. */
  duplicate: boolean;
  answered: number | null;
};

type Event = { id: string; type: string; data: { object: { id?: string } } };

const pools = new Map<string, mariadb.Pool>();
/** The merchant's database: `url`, else the test stack's. */
function database(url = process.env.DATABASE_ADMIN_URL ?? process.env.DATABASE_URL!) {
  let pool = pools.get(url);
  if (!pool) {
    pool = mariadb.createPool({ ...mysqlConnectionOptions(url), connectionLimit: 4 });
    pools.set(url, pool);
  }
  return pool;
}

/** The receiver's own tables: what it processed (unique by event id), and its "work" (a row per event). */
async function ensureTables(pool: mariadb.Pool) {
  await pool.query(`CREATE TABLE IF NOT EXISTS webhook_receiver_processed (
    event_id VARCHAR(64) NOT NULL, receiver VARCHAR(64) NOT NULL, processed_at DATETIME(3) NOT NULL,
    PRIMARY KEY (receiver, event_id))`);
  await pool.query(`CREATE TABLE IF NOT EXISTS webhook_receiver_orders (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, receiver VARCHAR(64) NOT NULL, event_id VARCHAR(64) NOT NULL,
    type VARCHAR(64) NOT NULL, object_id VARCHAR(64) NULL, INDEX (receiver))`);
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Starts a receiver on 127.0.0.1 (`port`, else any free one). `secrets()` is what it verifies with (any one of
 * them may sign, as during a rotation's overlap); `behave(n)` decides the n-th request's fate (1-based);
 * `databaseUrl` is where it deduplicates (else the test stack's database).
 */
export async function startReceiver(
  name: string,
  opts: { secrets: () => string[]; behave?: (n: number) => Behaviour; port?: number; databaseUrl?: string },
) {
  const pool = database(opts.databaseUrl);
  await ensureTables(pool);
  const received: Received[] = [];
  const handling = new Set<Promise<void>>();
  let count = 0;
  const handle = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    const n = ++count;
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const headers = {
      "webhook-id": String(request.headers["webhook-id"] ?? ""),
      "webhook-timestamp": String(request.headers["webhook-timestamp"] ?? ""),
      "webhook-signature": String(request.headers["webhook-signature"] ?? ""),
    };
    const entry: Received = {
      at: Date.now(),
      path: request.url ?? "",
      id: headers["webhook-id"],
      timestamp: headers["webhook-timestamp"],
      signature: headers["webhook-signature"],
      body,
      verified: false,
      badSignature: false,
      duplicate: false,
      answered: null,
    };
    received.push(entry);
    const behaviour = opts.behave?.(n) ?? "ok";
    if (behaviour === "drop") return void request.socket.destroy();
    if (behaviour === "redirect") {
      entry.answered = 302;
      response.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
      return;
    }
    if (behaviour === "slow" || typeof behaviour === "object") {
      await new Promise((r) => setTimeout(r, behaviour === "slow" ? SLOW_MS : behaviour.slowMs));
    }
    if (behaviour === "fail") {
      entry.answered = 500;
      response.writeHead(500, { "content-type": "text/plain" }).end("receiver failed on purpose");
      return;
    }
    let event: Event;
    try {
      event = verify(body, headers, opts.secrets());
    } catch (error) {
      entry.badSignature = true;
      entry.answered = 400;
      response.writeHead(400).end(String(error));
      return;
    }
    entry.verified = true;
    try {
      entry.duplicate = !(await processOnce(pool, name, event));
    } catch (error) {
      // Its database failed: not processed, and the sender is told to try again.
      entry.answered = 500;
      response.writeHead(500).end(String(error));
      return;
    }
    entry.answered = 200;
    response.writeHead(200, { "content-type": "application/json" }).end('{"received":true}');
  };
  const server = http.createServer((request, response) => {
    const handled: Promise<void> = handle(request, response).finally(() => handling.delete(handled));
    handling.add(handled);
  });
  server.listen(opts.port ?? 0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  let listening = true;
  const stopListening = async () => {
    if (!listening) return;
    listening = false;
    const closed = once(server, "close");
    server.close();
    server.closeAllConnections();
    await closed;
  };
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    /** The events it processed (once each), in the order it processed them. */
    processed: async () =>
      (await pool.query(
        `SELECT event_id AS eventId, type, object_id AS objectId
           FROM webhook_receiver_orders WHERE receiver = ? ORDER BY id`,
        [name],
      )) as { eventId: string; type: string; objectId: string | null }[],
    /** Not listening at all (the port refuses connections) until `back()`; open connections are cut. */
    away: stopListening,
    back: async () => {
      if (listening) return;
      server.listen(port, "127.0.0.1");
      await once(server, "listening");
      listening = true;
    },
    /** Stops listening and waits for the requests it is still working on. */
    close: async () => {
      await stopListening();
      await Promise.all(handling);
    },
  };
}

/** Any one of the secrets verifies it: the package checks each signature in the header against one secret. */
function verify(body: string, headers: Record<string, string>, secrets: string[]) {
  let failure: unknown = new Error("no secret to verify with");
  for (const secret of secrets) {
    try {
      return new Webhook(secret).verify(body, headers) as Event;
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}

/**
 * The recipe: in one transaction, claim the event id (the unique index decides) and do the work; a duplicate
 * does nothing and is still answered 200, so the sender stops retrying it. True when this call processed it.
 */
async function processOnce(pool: mariadb.Pool, receiver: string, event: Event): Promise<boolean> {
  const connection = await pool.getConnection();
  try {
    await connection.beginTransaction();
    const claimed = await connection.query(
      "INSERT IGNORE INTO webhook_receiver_processed (event_id, receiver, processed_at) VALUES (?, ?, NOW(3))",
      [event.id, receiver],
    );
    const first = Number(claimed.affectedRows) === 1;
    if (first) {
      await connection.query(
        "INSERT INTO webhook_receiver_orders (receiver, event_id, type, object_id) VALUES (?, ?, ?, ?)",
        [receiver, event.id, event.type, event.data.object.id ?? null],
      );
    }
    await connection.commit();
    return first;
  } catch (error) {
    await connection.rollback().catch(() => {});
    throw error;
  } finally {
    connection.release();
  }
}

export async function closeReceiverDatabase() {
  for (const pool of pools.values()) await pool.end();
  pools.clear();
}
