/**
 * Webhooks (issue 41, items 2, 3 and 5), through the real server, the real dispatcher (the test stack runs one, as
 * npm start does) and real receiving HTTP servers that verify with the `standardwebhooks` package and deduplicate
 * by event id in their own table: each event type, the signature, rotation, the backoff schedule (the test stack's
 * short one: WEBHOOK_RETRY_BASE_MS=200 ...), disabling, send again, redirects and timeouts, several dispatchers.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, describe, test } from "node:test";
import { Webhook } from "standardwebhooks";
import { env } from "~/env";
import { cliContext } from "~/server/audit/audit";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import { sendAgain, sendTestEvent } from "~/server/webhooks/deliveries";
import { deliver } from "~/server/webhooks/dispatcher";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { serverScriptArgs, startDispatcher } from "../scripts/lib/processes";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  postCharge,
  postRefund,
  seedRecord,
  uniqueKey,
  waitFor,
} from "./helpers";
import { type Behaviour, closeReceiverDatabase, type Receiver, startReceiver } from "../scripts/lib/webhookReceiver";

const receivers: Receiver[] = [];
after(async () => {
  for (const r of receivers) await r.close();
  await closeReceiverDatabase();
  await closeConnections();
});

const call = async (method: string, path: string, apiKey: string, body?: unknown) => {
  const res = await fetch(`${APP_URL}${path}`, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, text, headers: res.headers };
};

/** A new client with one endpoint to a new receiver; the receiver verifies with the endpoint's secret(s). */
async function subscribed(name: string, types: string[] = ["*"], behave?: (n: number) => Behaviour) {
  const client = await newApiClient(`webhooks ${name}`);
  const secrets: string[] = [];
  const receiver = await startReceiver(`${name}-${uniqueKey().slice(-8)}`, { secrets: () => secrets, behave });
  receivers.push(receiver);
  const made = await call("POST", "/api/webhook_endpoints", client.apiKey, {
    url: receiver.url,
    enabled_events: types,
  });
  assert.equal(made.status, 201, made.text);
  secrets.push(made.json.secret);
  return { client, receiver, endpoint: made.json as { id: string; secret: string }, secrets };
}

/** A datetime `ms` from now, as the dispatcher writes a lease's end. */
const leaseFromNow = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 23).replace("T", " ");

/**
 * An event and its delivery as a dispatcher's claim leaves them (attempt `attempts`, leased until `leaseEnd`),
 * written in one transaction, so that no live dispatcher can take the delivery first.
 */
async function claimedDelivery(
  to: { clientId: number; endpointId: string; eventId: string },
  attempts: number,
  leaseEnd: string,
) {
  await db.$transaction([
    db.$executeRawUnsafe(
      `INSERT INTO events (id, api_client_id, type, data, created_at)
       VALUES (?, ?, 'charge.succeeded', '{"id":"ch_claimed","object":"charge"}', UTC_TIMESTAMP(3))`,
      to.eventId,
      to.clientId,
    ),
    db.$executeRawUnsafe(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, api_client_id, attempts, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(3))`,
      to.eventId,
      to.endpointId,
      to.clientId,
      attempts,
      leaseEnd,
    ),
  ]);
}

const processedTypes = async (receiver: Receiver) => (await receiver.processed()).map((p) => p.type);

describe("webhook endpoints through the API", () => {
  test("made with a secret shown once; listed and read without it; a client sees only its own", async () => {
    const client = await newApiClient("webhooks api");
    const other = await newApiClient("webhooks api, another");
    const made = await call("POST", "/api/webhook_endpoints", client.apiKey, {
      url: "https://example.com/hooks",
      enabled_events: ["charge.succeeded", "refund.succeeded"],
      description: "orders",
    });
    assert.equal(made.status, 201, made.text);
    assert.match(made.json.secret, /^whsec_[A-Za-z0-9+/=]+$/);
    assert.deepEqual(made.json.enabled_events, ["charge.succeeded", "refund.succeeded"]);
    const listed = await call("GET", "/api/webhook_endpoints", client.apiKey);
    assert.deepEqual(
      listed.json.data.map((e: any) => [e.id, e.secret]),
      [[made.json.id, undefined]],
    );
    assert.equal((await call("GET", `/api/webhook_endpoints/${made.json.id}`, client.apiKey)).json.secret, undefined);
    assertError(await call("GET", `/api/webhook_endpoints/${made.json.id}`, other.apiKey), 404, "not_found");
    assertError(await call("DELETE", `/api/webhook_endpoints/${made.json.id}`, other.apiKey), 404, "not_found");
    assert.deepEqual((await call("GET", "/api/webhook_endpoints", other.apiKey)).json.data, []);
    const gone = await call("DELETE", `/api/webhook_endpoints/${made.json.id}`, client.apiKey);
    assert.equal(gone.json.deleted, true);
    assert.equal(await db.auditEvent.count({ where: { targetId: made.json.id } }), 2, "created and deleted, audited");
  });

  test("refused: not http(s), credentials in the URL, unknown event types, unknown fields", async () => {
    const client = await newApiClient("webhooks refusals");
    for (const body of [
      { url: "ftp://example.com/x", enabled_events: ["*"] },
      { url: "file:///etc/passwd", enabled_events: ["*"] },
      { url: "https://user:pw@example.com/x", enabled_events: ["*"] },
      { url: "https://example.com/x", enabled_events: ["charge.nope"] },
      { url: "https://example.com/x", enabled_events: [] },
      { url: "https://example.com/x", enabled_events: ["*"], secret: "mine" },
    ]) {
      const res = await call("POST", "/api/webhook_endpoints", client.apiKey, body);
      assertError(res, 400, "invalid_request");
    }
  });
});

describe("deliveries", () => {
  test("every event type reaches a subscribed endpoint, signed (standardwebhooks verifies), as shown", async () => {
    const { client, receiver, endpoint } = await subscribed("types");
    const charge = await postCharge({
      apiKey: client.apiKey,
      key: uniqueKey(),
      body: chargeBody({ amount_cents: 900 }),
    });
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) });
    const refund = await postRefund({ apiKey: client.apiKey, key: uniqueKey(), body: { charge: charge.json.id } });
    assert.equal(refund.status, 201, refund.text);
    const record = await seedRecord({ apiClientId: client.id, phase: "released", body: chargeBody(), ageMs: 600_000 });
    await reapAbandoned({ olderThanMs: 0 });
    await waitFor("four events processed", async () => (await receiver.processed()).length >= 4, 20_000);
    assert.deepEqual((await processedTypes(receiver)).sort(), [
      "charge.failed",
      "charge.succeeded",
      "operation.written_off",
      "refund.succeeded",
    ]);
    for (const r of receiver.received) {
      assert.ok(r.verified, "verified by the standardwebhooks package");
      // What GET /api/events/{id} shows, byte for byte the object; the id is the webhook-id.
      const event = JSON.parse(r.body);
      assert.equal(event.id, r.id);
      assert.deepEqual((await call("GET", `/api/events/${r.id}`, client.apiKey)).json, event);
      // A wrong secret does not verify.
      assert.throws(() =>
        new Webhook(`whsec_${Buffer.from("not the secret").toString("base64")}`).verify(r.body, {
          "webhook-id": r.id,
          "webhook-timestamp": r.timestamp,
          "webhook-signature": r.signature,
        }),
      );
    }
    const written = JSON.parse(receiver.received.find((r) => r.body.includes("operation.written_off"))!.body);
    assert.equal(written.request.id, String(record.id));
    const delivered = await waitFor("every result recorded", async () => {
      const rows = await db.webhookDelivery.findMany({ where: { endpointId: endpoint.id } });
      return rows.every((d) => d.state !== "pending") && rows;
    });
    assert.ok(delivered.every((d) => d.state === "delivered" && d.attempts === 1));
  });

  test("only the types an endpoint subscribed to; none for another client's events", async () => {
    const { client, receiver } = await subscribed("filtered", ["charge.failed"]);
    const { receiver: bystander } = await subscribed("bystander");
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    const declined = await postCharge({
      apiKey: client.apiKey,
      key: uniqueKey(),
      body: chargeBody({ card_token: "tok_declined" }),
    });
    await waitFor("the decline processed", async () => (await receiver.processed()).length >= 1, 10_000);
    // Another event, to this test's own test endpoint, lets the dispatcher show it has nothing else for it.
    assert.deepEqual(
      (await receiver.processed()).map((p) => [p.type, p.objectId]),
      [["charge.failed", declined.json.error.charge]],
    );
    assert.equal(bystander.received.length, 0);
  });

  test("secret rotation: during the overlap both secrets sign; after it only the new one", async () => {
    const { client, receiver, endpoint } = await subscribed("rotation", ["charge.succeeded"]);
    const rotated = await call("POST", `/api/webhook_endpoints/${endpoint.id}/rotate`, client.apiKey, {
      overlap_seconds: 3600,
    });
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.json.secret, endpoint.secret);
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered", async () => receiver.received.length >= 1, 10_000);
    const r = receiver.received[0]!;
    const headers = { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature };
    assert.equal(r.signature.split(" ").length, 2, "two signatures");
    assert.doesNotThrow(() => new Webhook(endpoint.secret).verify(r.body, headers), "the old secret verifies");
    assert.doesNotThrow(() => new Webhook(rotated.json.secret).verify(r.body, headers), "the new secret verifies");

    const again = await call("POST", `/api/webhook_endpoints/${endpoint.id}/rotate`, client.apiKey, {
      overlap_seconds: 0,
    });
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered again", async () => receiver.received.length >= 2, 10_000);
    const s = receiver.received[1]!;
    const sHeaders = { "webhook-id": s.id, "webhook-timestamp": s.timestamp, "webhook-signature": s.signature };
    assert.equal(s.signature.split(" ").length, 1);
    assert.doesNotThrow(() => new Webhook(again.json.secret).verify(s.body, sHeaders));
    assert.throws(() => new Webhook(rotated.json.secret).verify(s.body, sHeaders), "the replaced one no longer signs");
  });

  test("failures are retried with exponential backoff until a 2xx; every attempt recorded", async () => {
    const { client, receiver, endpoint } = await subscribed("backoff", ["charge.succeeded"], (n) =>
      n <= 3 ? "fail" : "ok",
    );
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("processed after three failures", async () => (await receiver.processed()).length === 1, 20_000);
    const times = receiver.received.map((r) => r.at);
    assert.equal(times.length, 4);
    assert.equal(new Set(receiver.received.map((r) => r.id)).size, 1, "one event, one webhook-id on every attempt");
    // The n-th retry waits at least half of base * 2^(n-1) (the jitter takes off at most half).
    for (let n = 1; n <= 3; n++) {
      const gap = times[n]! - times[n - 1]!;
      assert.ok(gap >= (env.WEBHOOK_RETRY_BASE_MS * 2 ** (n - 1)) / 2 - 5, `retry ${n} waited ${gap} ms`);
    }
    const delivery = await waitFor("recorded", async () => {
      const d = await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
      return d.state !== "pending" && d;
    });
    assert.equal(delivery.state, "delivered");
    assert.equal(delivery.attempts, 4);
    const attempts = await db.webhookAttempt.findMany({
      where: { deliveryId: delivery!.id },
      orderBy: { attempt: "asc" },
    });
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.status]),
      [
        [1, 500],
        [2, 500],
        [3, 500],
        [4, 200],
      ],
    );
    assert.equal(attempts[0]!.responseBody, "receiver failed on purpose");
    assert.equal(attempts[3]!.responseBody, '{"received":true}');
    assert.ok(attempts.every((a) => a.durationMs >= 0));
    const health = await db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
    assert.equal(health.failingSince, null, "a 2xx ends the failing streak");
  });

  test("no redirect is followed; a slow answer times out; a dropped connection is a failure", async () => {
    const { client, receiver, endpoint } = await subscribed("misbehaving", ["charge.succeeded"], (n) =>
      n === 1 ? "redirect" : n === 2 ? "slow" : n === 3 ? "drop" : "ok",
    );
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered at last", async () => (await receiver.processed()).length === 1, 30_000);
    assert.ok(
      receiver.received.every((r) => r.path === "/webhooks"),
      "the redirect's target was never asked",
    );
    const delivery = await waitFor("recorded", async () => {
      const d = await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
      return d.state !== "pending" && d;
    });
    const attempts = await db.webhookAttempt.findMany({
      where: { deliveryId: delivery.id },
      orderBy: { attempt: "asc" },
    });
    assert.equal(attempts[0]!.status, 302);
    assert.equal(attempts[1]!.status, null);
    assert.match(attempts[1]!.error ?? "", /timed out/);
    assert.ok(attempts[1]!.durationMs >= env.WEBHOOK_TIMEOUT_MS - 50);
    assert.equal(attempts[2]!.status, null);
    assert.ok(attempts[2]!.error);
    assert.equal(attempts.at(-1)!.status, 200);
  });

  test("an endpoint failing for WEBHOOK_DISABLE_AFTER_MS is disabled, saying why; its delivery gives up", async () => {
    const { client, receiver, endpoint } = await subscribed("failing", ["charge.succeeded"], () => "fail");
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    const disabled = await waitFor(
      "the endpoint disabled",
      async () => {
        const e = await db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
        return !e.enabled && e;
      },
      env.WEBHOOK_DISABLE_AFTER_MS + 20_000,
    );
    assert.match(disabled.disabledReason ?? "", /No 2xx since .* \(last: HTTP 500\)/);
    const shown = await call("GET", `/api/webhook_endpoints/${endpoint.id}`, client.apiKey);
    assert.equal(shown.json.status, "disabled");
    assert.equal(shown.json.disabled_reason, disabled.disabledReason);
    await waitFor(
      "the delivery finished",
      async () =>
        (await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } })).state !== "pending",
      env.WEBHOOK_RETRY_FOR_MS + 10_000,
    );
    const delivery = await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
    assert.ok(["failed", "cancelled"].includes(delivery.state), delivery.state);
    assert.ok(receiver.received.length >= 3, "retried before giving up");
    // A disabled endpoint gets nothing new.
    const before = await db.webhookDelivery.count({ where: { endpointId: endpoint.id } });
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    assert.equal(await db.webhookDelivery.count({ where: { endpointId: endpoint.id } }), before);
  });

  test("send again: posted once more under the same event id, processed once; audited; a test event", async () => {
    const { client, receiver, endpoint } = await subscribed("again", ["charge.succeeded"]);
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered", async () => receiver.received.length === 1, 10_000);
    // At once, while the first attempt's result may still be on its way: sent again all the same.
    const delivery = await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
    await sendAgain(delivery.id, cliContext("webhooks test"));
    await waitFor("delivered again", async () => receiver.received.length === 2, 10_000);
    assert.equal(receiver.received[1]!.id, receiver.received[0]!.id);
    assert.equal((await receiver.processed()).length, 1, "the receiver's unique index kept it to once");
    const audit = await db.auditEvent.findFirstOrThrow({
      where: { action: "webhook_delivery.sent_again", targetId: String(delivery.id) },
    });
    assert.equal(audit.actorLabel, "webhooks test");
    const testEvent = await sendTestEvent(endpoint.id, cliContext("webhooks test"));
    await waitFor("the test event", async () => receiver.received.some((r) => r.id === testEvent), 10_000);
    assert.ok(receiver.received.find((r) => r.id === testEvent)!.verified);
  });

  test("several dispatchers at once: every event delivered, none twice (FOR UPDATE SKIP LOCKED)", async () => {
    const { client, receiver } = await subscribed("crowd", ["charge.succeeded"]);
    const appEnv = process.env.TEST_APP_DATABASE_URL ? { DATABASE_URL: process.env.TEST_APP_DATABASE_URL } : {};
    const extra = [1, 2].map(() =>
      startDispatcher({ ...process.env, ...appEnv } as Record<string, string>, { quiet: true }),
    );
    try {
      const charges = 30;
      await Promise.all(
        Array.from({ length: charges }, () =>
          postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() }),
        ),
      );
      await waitFor("all delivered", async () => (await receiver.processed()).length === charges, 30_000);
      const ids = receiver.received.map((r) => r.id);
      assert.equal(new Set(ids).size, charges);
      assert.equal(ids.length, charges, "no delivery posted twice");
    } finally {
      for (const d of extra) await d.stop();
    }
  });

  test("a dispatcher that died after its claim: the delivery is posted by another once the lease ends", async () => {
    const { client, receiver, endpoint } = await subscribed("orphaned", ["charge.succeeded"]);
    // A dispatcher's claim, made in the transaction that makes the delivery (so no live dispatcher can take it
    // first), and then nothing: the process is gone. The row says claimed (attempt 1) until its lease ends.
    const eventId = `evt_orphan${uniqueKey().slice(-12)}`;
    const leaseMs = env.WEBHOOK_TIMEOUT_MS + 5_000;
    const claimedAt = Date.now();
    await claimedDelivery({ clientId: client.id, endpointId: endpoint.id, eventId }, 1, leaseFromNow(leaseMs));
    await waitFor("posted after the lease", async () => receiver.received.length === 1, leaseMs + 15_000);
    assert.ok(receiver.received[0]!.at - claimedAt >= leaseMs - 1_000, "not before the lease ended");
    assert.equal(receiver.received[0]!.id, eventId);
    // Its result is recorded once the receiver has answered.
    const delivery = await waitFor("recorded", async () => {
      const d = await db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
      return d.state !== "pending" && d;
    });
    assert.deepEqual([delivery.state, delivery.attempts], ["delivered", 2]);
    void postCharge;
  });

  test("a dispatcher that stalled past its lease writes nothing: the later attempt's result stands", async () => {
    const { client, receiver, endpoint } = await subscribed("stalled", ["charge.succeeded"]);
    // A delivery claimed twice: attempt 1's lease ended and attempt 2 holds the row (leased an hour ahead, so the
    // stack's own dispatcher leaves it alone). Both dispatchers post; only attempt 2's result may be written.
    const eventId = `evt_stall${uniqueKey().slice(-12)}`;
    const [firstLease, secondLease] = [leaseFromNow(-60_000), leaseFromNow(3_600_000)];
    await claimedDelivery({ clientId: client.id, endpointId: endpoint.id, eventId }, 2, secondLease);
    const { id } = await db.webhookDelivery.findFirstOrThrow({ where: { eventId } });
    await deliver({ id, attempts: 1, leaseEnd: firstLease }, { id: 999_999_999n, attempts: 1, leaseEnd: firstLease });
    assert.equal(receiver.received.length, 1, "the stalled attempt still posts (at least once)");
    const untouched = await db.webhookDelivery.findUniqueOrThrow({ where: { id } });
    assert.deepEqual([untouched.state, untouched.attempts, untouched.lastStatus], ["pending", 2, null]);
    await deliver({ id, attempts: 2, leaseEnd: secondLease });
    const done = await db.webhookDelivery.findUniqueOrThrow({ where: { id } });
    assert.deepEqual([done.state, done.lastStatus], ["delivered", 200]);
    const attempts = await db.webhookAttempt.findMany({ where: { deliveryId: id }, orderBy: { attempt: "asc" } });
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.status]),
      [
        [1, 200],
        [2, 200],
      ],
      "every attempt is recorded, the fenced-out one too",
    );
    assert.equal((await receiver.processed()).length, 1, "processed once");
  });
});

describe("the SDK's verifyWebhook", () => {
  test("accepts what the dispatcher signed, refuses a forged or stale one", async () => {
    const { verifyWebhook, WebhookVerificationError } = await import("@charges/client/webhooks");
    const { client, receiver, endpoint } = await subscribed("sdk", ["charge.succeeded"]);
    await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered", async () => receiver.received.length === 1, 10_000);
    const r = receiver.received[0]!;
    const headers = { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature };
    const event = verifyWebhook(r.body, headers, endpoint.secret);
    assert.equal(event.id, r.id);
    assert.equal(event.type, "charge.succeeded");
    assert.throws(
      () => verifyWebhook(r.body.replace("succeeded", "failed"), headers, endpoint.secret),
      WebhookVerificationError,
    );
    const stale = { ...headers, "webhook-timestamp": String(Number(r.timestamp) - 3600) };
    assert.throws(() => verifyWebhook(r.body, stale, endpoint.secret), WebhookVerificationError);
  });
});

describe("managing endpoints from the dashboard and the CLI", () => {
  const staff = async (role: "support" | "engineer") => {
    const u = await db.staffUser.create({
      data: { email: `webhooks-${role}-${uniqueKey()}@example.com`, name: `W ${role}`, role, passwordHash: "x" },
    });
    return createCaller(createInnerTRPCContext({ user: { id: u.id, email: u.email, name: u.name, role: u.role } }));
  };

  test("engineers manage and send again (audited as themselves); support reads a charge's events", async () => {
    const engineer = await staff("engineer");
    const support = await staff("support");
    const client = await newApiClient("webhooks dashboard");
    const secrets: string[] = [];
    const receiver = await startReceiver(`dashboard-${uniqueKey().slice(-8)}`, { secrets: () => secrets });
    receivers.push(receiver);
    const input = { apiClientId: client.id, url: receiver.url, eventTypes: ["charge.succeeded"] };
    await assert.rejects(support.webhooks.create(input), /engineers/i);
    const made = await engineer.webhooks.create(input);
    secrets.push(made.secret);
    const charge = await postCharge({ apiKey: client.apiKey, key: uniqueKey(), body: chargeBody() });
    await waitFor("delivered", async () => receiver.received.length === 1, 10_000);
    const [delivery] = await engineer.webhooks.deliveries({ id: made.id });
    assert.equal(delivery!.eventType, "charge.succeeded");
    await waitFor(
      "recorded",
      async () => (await engineer.webhooks.deliveries({ id: made.id }))[0]!.state === "delivered",
    );
    const attempts = await engineer.webhooks.attempts({ deliveryId: delivery!.id });
    assert.deepEqual(
      attempts.map((a) => a.status),
      [200],
    );
    await engineer.webhooks.sendAgain({ deliveryId: delivery!.id });
    await waitFor("sent again", async () => receiver.received.length === 2, 10_000);
    const audited = await db.auditEvent.findFirstOrThrow({
      where: { action: "webhook_delivery.sent_again", targetId: delivery!.id },
    });
    assert.equal(audited.actorType, "staff");
    const events = await support.webhooks.eventsOf({ chargeId: charge.json.id });
    assert.deepEqual(
      events.map((e) => [e.type, e.deliveries.map((d) => d.url)]),
      [["charge.succeeded", [receiver.url]]],
    );
    const record = await db.idempotentRequest.findFirstOrThrow({ where: { apiClientId: client.id } });
    assert.equal((await support.webhooks.eventsOf({ requestId: String(record.id) }))[0]!.id, events[0]!.id);
    await engineer.webhooks.setEnabled({ id: made.id, enabled: false });
    assert.equal((await engineer.webhooks.endpoints()).find((e) => e.id === made.id)!.status, "disabled");
    await engineer.webhooks.remove({ id: made.id });
  });

  test("npm run webhooks: create (the secret printed once), list, rotate, test, delete", async () => {
    const client = await newApiClient("webhooks cli");
    const cli = (...args: string[]) =>
      execFileSync(process.execPath, [...serverScriptArgs("scripts/webhooks.ts"), ...args, "--actor", "ci"], {
        encoding: "utf8",
        env: { ...process.env, DATABASE_ADMIN_URL: process.env.DATABASE_ADMIN_URL },
      });
    const created = cli("create", "--client", String(client.id), "--url", "https://example.com/cli-hook");
    const id = /endpoint (we_[0-9a-f]{24})/.exec(created)![1]!;
    assert.match(created, /signing secret \(shown once\): whsec_/);
    assert.match(
      cli("list", "--client", String(client.id)),
      new RegExp(`${id} client #${client.id} https://example.com/cli-hook`),
    );
    assert.doesNotMatch(cli("list"), /whsec_/, "a secret is never listed");
    assert.match(cli("rotate", id, "--overlap-hours", "1"), /new signing secret \(shown once\): whsec_/);
    assert.match(cli("test", id), /test event evt_/);
    assert.match(cli("delete", id), /deleted/);
    const audited = await db.auditEvent.findMany({ where: { targetId: id }, orderBy: { id: "asc" } });
    assert.deepEqual(
      audited.map((a) => [a.action, a.actorLabel]),
      [
        ["webhook_endpoint.created", "cli:ci"],
        ["webhook_endpoint.secret_rotated", "cli:ci"],
        ["webhook_endpoint.test_sent", "cli:ci"],
        ["webhook_endpoint.deleted", "cli:ci"],
      ],
    );
  });
});
