/**
 * A merchant's webhook receiver, as docs/webhooks.md tells one to write it, run as a real HTTP server for the
 * tests: it verifies each delivery with the `standardwebhooks` package (the spec's own), then does its work and
 * records the event id in ONE transaction, where a unique index on the id makes a second delivery of the same
 * event a no-op (answered 200, processed once). Its table is its own (a merchant's database: here the test one).
 * It can be told to misbehave (answer 500, be slow, drop the connection, redirect) to test the dispatcher.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import * as mariadb from "mariadb";
import { Webhook } from "standardwebhooks";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";

export type Behaviour = "ok" | "fail" | "slow" | "drop" | "redirect";

export type Received = {
  at: number;
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  verified: boolean;
  answered: number | null;
};

let pool: mariadb.Pool | undefined;
function database() {
  pool ??= mariadb.createPool({
    ...mysqlConnectionOptions(process.env.DATABASE_ADMIN_URL ?? process.env.DATABASE_URL!),
    connectionLimit: 4,
  });
  return pool;
}

/** The receiver's own tables: what it processed (unique by event id), and its "work" (a row per event). */
async function ensureTables() {
  await database().query(`CREATE TABLE IF NOT EXISTS test_webhook_processed (
    event_id VARCHAR(64) NOT NULL, receiver VARCHAR(64) NOT NULL, processed_at DATETIME(3) NOT NULL,
    PRIMARY KEY (receiver, event_id))`);
  await database().query(`CREATE TABLE IF NOT EXISTS test_webhook_orders (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, receiver VARCHAR(64) NOT NULL, event_id VARCHAR(64) NOT NULL,
    type VARCHAR(64) NOT NULL, object_id VARCHAR(64) NULL, INDEX (receiver))`);
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Starts a receiver on 127.0.0.1. `secrets()` is what it verifies with (any one of them may sign, as during a
 * rotation's overlap); `behave(n)` decides the n-th request's fate (1-based).
 */
export async function startReceiver(
  name: string,
  opts: { secrets: () => string[]; behave?: (n: number) => Behaviour },
) {
  await ensureTables();
  const received: Received[] = [];
  let count = 0;
  const server = http.createServer(async (request, response) => {
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
      answered: null,
    };
    received.push(entry);
    const behaviour = opts.behave?.(n) ?? "ok";
    if (behaviour === "drop") return request.socket.destroy();
    if (behaviour === "redirect") {
      entry.answered = 302;
      response.writeHead(302, { location: `http://127.0.0.1:${port()}/elsewhere` }).end();
      return;
    }
    if (behaviour === "slow") await new Promise((r) => setTimeout(r, 5_000));
    if (behaviour === "fail") {
      entry.answered = 500;
      response.writeHead(500, { "content-type": "text/plain" }).end("receiver failed on purpose");
      return;
    }
    let event: { id: string; type: string; data: { object: { id?: string } } };
    try {
      event = verify(body, headers, opts.secrets());
    } catch (error) {
      entry.answered = 400;
      response.writeHead(400).end(String(error));
      return;
    }
    entry.verified = true;
    await processOnce(name, event);
    entry.answered = 200;
    response.writeHead(200, { "content-type": "application/json" }).end('{"received":true}');
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = () => (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port()}/webhooks`,
    received,
    /** The events it processed (once each), in the order it processed them. */
    processed: async () =>
      (await database().query(
        `SELECT event_id AS eventId, type, object_id AS objectId
           FROM test_webhook_orders WHERE receiver = ? ORDER BY id`,
        [name],
      )) as { eventId: string; type: string; objectId: string | null }[],
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Any one of the secrets verifies it: the package checks each signature in the header against one secret. */
function verify(body: string, headers: Record<string, string>, secrets: string[]) {
  let failure: unknown;
  for (const secret of secrets) {
    try {
      return new Webhook(secret).verify(body, headers) as {
        id: string;
        type: string;
        data: { object: { id?: string } };
      };
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}

/**
 * The recipe: in one transaction, claim the event id (the unique index decides) and do the work; a duplicate
 * does nothing and is still answered 200, so the sender stops retrying it.
 */
async function processOnce(receiver: string, event: { id: string; type: string; data: { object: { id?: string } } }) {
  const connection = await database().getConnection();
  try {
    await connection.beginTransaction();
    const claimed = await connection.query(
      "INSERT IGNORE INTO test_webhook_processed (event_id, receiver, processed_at) VALUES (?, ?, NOW(3))",
      [event.id, receiver],
    );
    if (Number(claimed.affectedRows) === 1) {
      await connection.query(
        "INSERT INTO test_webhook_orders (receiver, event_id, type, object_id) VALUES (?, ?, ?, ?)",
        [receiver, event.id, event.type, event.data.object.id ?? null],
      );
    }
    await connection.commit();
  } catch (error) {
    await connection.rollback().catch(() => {});
    throw error;
  } finally {
    connection.release();
  }
}

export async function closeReceiverDatabase() {
  await pool?.end();
  pool = undefined;
}
