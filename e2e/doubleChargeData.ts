/**
 * A labelled data set of true double charges and legitimate repeat purchases, made through the real API as the
 * clients of the incident and honest shoppers make them (issue 40, item 4). Each scenario is one customer of its
 * own, labelled with what it is; every pair the service finds among its charges has that label. The gaps, the
 * gateway's delays and the clients' patience are drawn from a seeded generator, printed so that a run replays.
 */
import { randomUUID } from "node:crypto";
import { expect } from "@playwright/test";
import { apiKey, appQuery, sweepOnce } from "./lib";

export type Label = "double_charge" | "legitimate";

export type Scenario = { customer: string; label: Label; kind: string };

/** mulberry32: a small seeded generator, enough to vary the timings reproducibly. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, between: (lo: number, hi: number) => Math.round(lo + next() * (hi - lo)) };
}

type Send = { customer: string; card: string; amount: number; key?: string; signal?: AbortSignal };

async function send(opts: Send) {
  return fetch(`${process.env.TEST_APP_URL}/api/charges`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${apiKey()}`,
      "Content-Type": "application/json",
      ...(opts.key ? { "Idempotency-Key": opts.key } : {}),
    },
    body: JSON.stringify({
      amount_cents: opts.amount,
      currency: "usd",
      card_token: opts.card,
      customer_id: opts.customer,
    }),
    signal: opts.signal,
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const records = async (customer: string) =>
  Number(
    (
      await appQuery<{ n: bigint }>("SELECT COUNT(*) AS n FROM idempotent_requests WHERE customer_id = ?", [customer])
    )[0]!.n,
  );

/**
 * The impatient client: sends, and gives up after `patienceMs` once its request holds a record (a request gone
 * before its claim is not worked on: on a loaded machine a claim can take longer than a client's patience).
 */
async function timesOut(opts: Send, patienceMs: number) {
  const before = await records(opts.customer);
  const client = new AbortController();
  const sent = send({ ...opts, signal: client.signal }).catch(() => null);
  await pause(patienceMs);
  await expect.poll(() => records(opts.customer), { timeout: 30_000 }).toBeGreaterThan(before);
  client.abort();
  const answer = await sent;
  expect(answer, `${opts.customer}: the client gave up before the gateway answered`).toBeNull();
}

/**
 * A purchase sent until it is answered 201, as the SDK does. Under its key it is sent again while the answer says
 * retry (409 while it is in flight; 503 when the gateway did not answer in time, on a loaded machine); without one,
 * a 502 charge_outcome_unknown (the slow gateway answered after the app's timeout) is looked up by its request_id,
 * as the answer says, once a sweep has settled it with the gateway.
 */
async function paid(opts: Send) {
  for (let attempt = 0; attempt < 60; attempt++) {
    const res = await send(opts);
    const text = await res.text();
    if (res.status === 201) return;
    const error = JSON.parse(text).error;
    if (!opts.key && error?.code === "charge_outcome_unknown") return settledLater(error.request_id);
    expect(Boolean(opts.key) && error?.retryable, `${opts.customer}: ${text}`).toBe(true);
    await pause(500);
  }
  throw new Error(`${opts.customer}: never answered 201`);
}

async function settledLater(requestId: string) {
  const lookup = () =>
    fetch(`${process.env.TEST_APP_URL}/api/charges?request_id=${requestId}`, {
      headers: { Authorization: `Bearer ${apiKey()}` },
    });
  const settled = async () => {
    sweepOnce(); // takes the record once its holder's lease has run out
    return (await lookup()).status;
  };
  await expect.poll(settled, { timeout: 60_000, intervals: [2_000] }).toBe(201);
}

/** An answer that is not a 201 (the gateway failed after charging: the outcome is unknown to the client). */
async function failed(opts: Send) {
  const res = await send(opts);
  expect(res.status, `${opts.customer}: the outcome was unknown`).toBeGreaterThanOrEqual(500);
}

type Make = (customer: string, r: ReturnType<typeof seeded>) => Promise<void>;

const AMOUNT = 4_200;
const slow = (r: ReturnType<typeof seeded>) => `tok_slow_${r.between(2_500, 4_000)}`;

/** What each kind of customer does. */
const KINDS: Record<string, { label: Label; make: Make }> = {
  // The founding incident in small: no key, the client times out, and sends the same purchase again at once.
  keyless_timeout_retry: {
    label: "double_charge",
    make: async (customer, r) => {
      const card = slow(r);
      await timesOut({ customer, card, amount: AMOUNT }, r.between(300, 1_200));
      await paid({ customer, card, amount: AMOUNT });
    },
  },
  // The same, after a back-off.
  keyless_backoff_retry: {
    label: "double_charge",
    make: async (customer, r) => {
      const card = slow(r);
      await timesOut({ customer, card, amount: AMOUNT }, r.between(300, 1_000));
      await pause(r.between(200, 1_500));
      await paid({ customer, card, amount: AMOUNT });
    },
  },
  // A new key per attempt: the key does not help.
  new_key_per_attempt: {
    label: "double_charge",
    make: async (customer, r) => {
      const card = slow(r);
      await timesOut({ customer, card, amount: AMOUNT, key: randomUUID() }, r.between(300, 1_200));
      await paid({ customer, card, amount: AMOUNT, key: randomUUID() });
    },
  },
  // Three attempts before one is answered: two extra charges.
  keyless_three_attempts: {
    label: "double_charge",
    make: async (customer, r) => {
      const card = slow(r);
      await timesOut({ customer, card, amount: AMOUNT }, r.between(300, 800));
      await timesOut({ customer, card, amount: AMOUNT }, r.between(300, 800));
      await paid({ customer, card, amount: AMOUNT });
    },
  },
  // The gateway charged, then failed: the client is told the outcome is unknown and sends it again.
  error_then_retry: {
    label: "double_charge",
    make: async (customer, r) => {
      await failed({ customer, card: "tok_charge_then_error", amount: AMOUNT });
      await pause(r.between(100, 1_000));
      await failed({ customer, card: "tok_charge_then_error", amount: AMOUNT });
    },
  },
  // A double click: the same request twice at once.
  double_submit: {
    label: "double_charge",
    make: async (customer) => {
      const card = "tok_slow_800";
      await Promise.all([paid({ customer, card, amount: AMOUNT }), paid({ customer, card, amount: AMOUNT })]);
    },
  },
  // Bought again knowingly, without a key, after the first was answered.
  keyless_repeat_purchase: {
    label: "legitimate",
    make: async (customer, r) => {
      await paid({ customer, card: "tok_visa", amount: AMOUNT });
      await pause(r.between(100, 3_000));
      await paid({ customer, card: "tok_visa", amount: AMOUNT });
    },
  },
  // The same, each purchase under its own key.
  keyed_repeat_purchase: {
    label: "legitimate",
    make: async (customer, r) => {
      await paid({ customer, card: "tok_visa", amount: AMOUNT, key: randomUUID() });
      await pause(r.between(100, 3_000));
      await paid({ customer, card: "tok_visa", amount: AMOUNT, key: randomUUID() });
    },
  },
  // A patient client on a slow gateway: it waits for its 201, then buys again.
  slow_but_answered_repeat: {
    label: "legitimate",
    make: async (customer, r) => {
      const card = slow(r);
      await paid({ customer, card, amount: AMOUNT });
      await pause(r.between(100, 1_000));
      await paid({ customer, card, amount: AMOUNT });
    },
  },
  // Two cards, one after the other.
  two_cards: {
    label: "legitimate",
    make: async (customer, r) => {
      await paid({ customer, card: "tok_visa", amount: AMOUNT });
      await pause(r.between(100, 2_000));
      await paid({ customer, card: "tok_mastercard", amount: AMOUNT });
    },
  },
  // Two devices paying at the same moment, with different cards.
  two_cards_at_once: {
    label: "legitimate",
    make: async (customer) => {
      await Promise.all([
        paid({ customer, card: "tok_visa", amount: AMOUNT }),
        paid({ customer, card: "tok_amex", amount: AMOUNT }),
      ]);
    },
  },
  // The SDK's way: timed out, retried under the same key (one charge, the replay tells it), then bought again.
  same_key_retry_then_repeat: {
    label: "legitimate",
    make: async (customer, r) => {
      const key = randomUUID();
      const card = slow(r);
      await timesOut({ customer, card, amount: AMOUNT, key }, r.between(300, 1_000));
      await paid({ customer, card, amount: AMOUNT, key });
      await pause(r.between(100, 2_000));
      await paid({ customer, card, amount: AMOUNT, key: randomUUID() });
    },
  },
};

/** Makes `perKind` customers of every kind, `concurrency` at a time; what each is. */
export async function generate(opts: { run: string; seed: number; perKind: number; concurrency: number }) {
  const r = seeded(opts.seed);
  const work = Object.entries(KINDS).flatMap(([kind, { label, make }]) =>
    Array.from({ length: opts.perKind }, (_, i) => ({
      scenario: { customer: `cus_cls_${opts.run}_${kind}_${i}`, label, kind },
      make,
    })),
  );
  // Shuffled, so that kinds run side by side.
  for (let i = work.length - 1; i > 0; i--) {
    const j = Math.floor(r.next() * (i + 1));
    [work[i], work[j]] = [work[j]!, work[i]!];
  }
  const queue = [...work];
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await next.make(next.scenario.customer, r);
    }),
  );
  return work.map((w) => w.scenario);
}
