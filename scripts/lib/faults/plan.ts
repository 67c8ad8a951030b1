/**
 * The plan of a randomized fault run, generated from one seed with fast-check:
 * which operations the clients send, how the gateway behaves for each, and
 * which faults strike when, and how the webhook receivers misbehave. The same
 * seed gives the same plan (`--seed` replays a failure); timing on a shared
 * machine varies, the plan does not.
 */
import fc from "fast-check";

/** How the simulated gateway treats one charge (its card token). */
export const GATEWAY_BEHAVIOURS = {
  fast: "tok_visa",
  /** Slower than the client's attempt timeout, within the app's gateway timeout. */
  slower_than_client: "tok_slow_1000",
  /** Slower than GATEWAY_TIMEOUT_MS: the app gives up, the gateway charges anyway. */
  slower_than_gateway_timeout: "tok_slow_2200",
  /** 500, nothing charged. */
  error: "tok_error",
  /** Charged, then 500: the money moved and the app was not told. */
  charge_then_error: "tok_charge_then_error",
  /**
   * Carried out late, after the app gave up (held up on its way, or queued at the processor): charged only
   * if it is still before the request's Charge-Not-After. Only the simulator's own protocol has that; Stripe
   * has no such parameter (docs/stripe.md), so runs through it leave this behaviour out.
   */
  late: "tok_late_2500",
  decline: "tok_declined",
  /** Charged at once; its refunds answer after 1 s (slower than the client's shorter attempt timeouts). */
  refund_slower_than_client: "tok_refund_slow_1000",
  /** Charged at once; its refunds answer after GATEWAY_TIMEOUT_MS: the app gives up, the gateway refunds anyway. */
  refund_slower_than_gateway_timeout: "tok_refund_slow_2200",
  /** Charged at once; its refunds fail with a 500 and refund nothing. */
  refund_error: "tok_refund_error",
  /** Charged at once; its refunds refund, then fail with a 500: the money moved back and the app was not told. */
  refund_then_error: "tok_refund_then_error",
} as const;
export type GatewayBehaviour = keyof typeof GATEWAY_BEHAVIOURS;

export type OperationKind =
  /** A new operation: a new key, sent through the SDK (which retries with the same key). */
  | "fresh"
  /** An earlier operation sent again, same key and body (a client process that restarted and resumed it). */
  | "retry"
  /** An earlier operation's key with another body: 422 for it, never a charge of its own. */
  | "other_body"
  /** An earlier operation's key from the other API client: keys are global, so 422. */
  | "other_client"
  /** No key at all: one attempt, its own operation. */
  | "keyless"
  /** A refund of an earlier fresh charge (`of`), under a new key, through the SDK's retry loop. */
  | "refund"
  /** An earlier refund operation (`of`: an index into the refunds) sent again, same key and body. */
  | "refund_retry"
  /** An earlier refund's key with another amount: 422, never a refund of its own. */
  | "refund_other_body"
  /** A refund without a key: one attempt. */
  | "refund_keyless"
  /** `count` refunds with different keys at once on one charge, each 40% of it: at most two may succeed. */
  | "refund_race"
  /**
   * A refund sent while its charge's own operation is being retried: the charge id is learnt by settling the
   * charge's key (GET /api/charges?idempotency_key=) and the refund goes out at the same moment as a retry of
   * the charge (same key and body) on the other instance.
   */
  | "refund_during_charge_retry";

/** How much a refund asks for: all that is left (no amount), part of the charge, or more than was charged. */
export type RefundShare = "rest" | "half" | "tenth" | "over";

export type PlannedOperation = {
  at: number;
  kind: OperationKind;
  /** For retry / other_body / other_client: which earlier fresh operation (an index into the fresh ones). */
  of: number;
  behaviour: GatewayBehaviour;
  client: 0 | 1;
  instance: 0 | 1;
  amountCents: number;
  attemptTimeoutMs: number;
  preferWaitSeconds: number;
  refundShare: RefundShare;
  /** For refund_race: how many refunds race. */
  count: number;
};

export type FaultKind =
  | "kill_app"
  | "kill_database"
  | "deadlocks"
  | "expire_in_flight"
  | "sweep_and_prune"
  /** The header required of one API client (`instance` picks which) for a while, then not: keyless refusals. */
  | "require_header"
  /**
   * Some of the gateway's money inserts held (gap locks in its tables) past the sweeper's write-off, then let go
   * (stallStorage.ts).
   */
  | "stall_storage"
  /** Every webhook receiver stops listening (its port refuses connections) for a while, then listens again. */
  | "receiver_away"
  /** Every webhook dispatcher SIGKILLed (mid-POST or not); after a while `count` (1 or 2) start again. */
  | "kill_dispatcher";
export type PlannedFault = { at: number; kind: FaultKind; instance: 0 | 1; downMs: number; count: number };

/**
 * What a webhook receiver does with one request (its n-th takes the n-th fate, cycling): answer at once, 500,
 * destroy the socket without an answer, answer after `slowMs` (within the dispatcher's timeout), or answer after
 * the timeout plus `slowMs` (the dispatcher has given up; the receiver processes it all the same).
 */
export type ReceiverFate = { kind: "ok" | "fail" | "drop" | "slow" | "past_timeout"; slowMs: number };

export type Plan = {
  seed: number;
  operations: PlannedOperation[];
  faults: PlannedFault[];
  /** One sequence of fates per webhook receiver. */
  receiverFates: ReceiverFate[][];
};

/**
 * `simProtocol`: the simulator's own protocol, which alone can carry a charge out late on purpose (`late`: held
 * up on its way, refused once past its deadline); the simulator's Stripe mode has no such card.
 */
const behaviours = (simProtocol: boolean) =>
  fc.constantFrom<GatewayBehaviour>(
    "fast",
    "fast",
    "fast",
    "fast",
    "slower_than_client",
    "slower_than_gateway_timeout",
    "error",
    "charge_then_error",
    "decline",
    ...(simProtocol ? (["late"] as const) : []),
    // Charges made to be refunded under faults of the gateway's own (their charge succeeds at once).
    "refund_slower_than_client",
    "refund_slower_than_gateway_timeout",
    "refund_error",
    "refund_then_error",
  );

const operation = (simProtocol: boolean) =>
  fc.record({
    kind: fc.constantFrom<OperationKind>(
      "fresh",
      "fresh",
      "fresh",
      "fresh",
      "retry",
      "retry",
      "other_body",
      "other_client",
      "keyless",
      "keyless",
      "refund",
      "refund",
      "refund",
      "refund_retry",
      "refund_other_body",
      "refund_keyless",
      "refund_race",
      "refund_during_charge_retry",
    ),
    of: fc.nat(),
    behaviour: behaviours(simProtocol),
    client: fc.constantFrom<0 | 1>(0, 1),
    instance: fc.constantFrom<0 | 1>(0, 1),
    amountCents: fc.integer({ min: 100, max: 99_999 }),
    attemptTimeoutMs: fc.constantFrom(700, 1_500, 3_000),
    preferWaitSeconds: fc.constantFrom(0, 0, 1, 2),
    refundShare: fc.constantFrom<RefundShare>("rest", "half", "half", "tenth", "tenth", "over"),
    count: fc.integer({ min: 3, max: 6 }),
  });

const fault = fc.record({
  kind: fc.constantFrom<FaultKind>(
    "kill_app",
    "kill_app",
    "kill_database",
    "deadlocks",
    "deadlocks",
    "expire_in_flight",
    "expire_in_flight",
    "sweep_and_prune",
    "require_header",
  ),
  instance: fc.constantFrom<0 | 1>(0, 1),
  downMs: fc.integer({ min: 300, max: 2_500 }),
  count: fc.integer({ min: 1, max: 6 }),
  gapMs: fc.integer({ min: 4_000, max: 12_000 }),
});

/** Storage stalls come on a cadence of their own, beside the other faults, so that a short run has several. */
const stall = fc.record({
  downMs: fc.integer({ min: 300, max: 2_500 }),
  gapMs: fc.integer({ min: 12_000, max: 22_000 }),
});

/** Webhook faults come on a cadence of their own too: the other faults' plans stay what they were per seed. */
const webhookFault = fc.record({
  kind: fc.constantFrom<FaultKind>("receiver_away", "kill_dispatcher", "kill_dispatcher"),
  downMs: fc.integer({ min: 300, max: 2_500 }),
  count: fc.constantFrom(1, 1, 2),
  gapMs: fc.integer({ min: 6_000, max: 14_000 }),
});

/** Mostly answered at once; about 1 in 3 requests misbehave. */
const receiverFate = fc.record({
  kind: fc.constantFrom<ReceiverFate["kind"]>(
    ...(Array(13).fill("ok") as "ok"[]),
    "fail",
    "fail",
    "fail",
    "drop",
    "drop",
    "slow",
    "past_timeout",
  ),
  slowMs: fc.integer({ min: 50, max: 800 }),
});

/** How many webhook receivers a run has (scripts/lib/faults/receivers.ts), and how many fates each cycles through. */
export const RECEIVERS = 3;
const FATES = 2_000;

/**
 * `rate` operations a second for `durationMs`, with a fault every 4-12 s, a storage stall every 12-22 s and a
 * webhook fault every 6-14 s (none in the first and last 5 s).
 */
export function makePlan(
  seed: number,
  durationMs: number,
  rate: number,
  { lateRequests }: { lateRequests: boolean },
): Plan {
  const count = Math.max(1, Math.round((durationMs / 1000) * rate));
  const [ops] = fc.sample(fc.array(operation(lateRequests), { minLength: count, maxLength: count }), {
    seed,
    numRuns: 1,
  });
  const [faultDraws] = fc.sample(fc.array(fault, { minLength: 1_000, maxLength: 1_000 }), {
    seed: seed + 1,
    numRuns: 1,
  });
  let fresh = 0;
  let refunds = 0;
  const operations = ops!.map((op, i): PlannedOperation => {
    // The first operation has nothing to refer to, nor does anything before the first fresh one (or refund).
    let kind = fresh === 0 && op.kind !== "keyless" ? "fresh" : op.kind;
    if (refunds === 0 && (kind === "refund_retry" || kind === "refund_other_body")) kind = "refund";
    // Refunds go mostly to recent charges, so that they meet their charge's retries and the same faults.
    const of =
      kind === "fresh"
        ? fresh
        : kind === "refund_retry" || kind === "refund_other_body"
          ? refunds - 1 - (op.of % Math.min(refunds, 8))
          : kind.startsWith("refund")
            ? fresh - 1 - (op.of % Math.min(fresh, 12))
            : op.of % Math.max(1, fresh);
    const planned = { ...op, kind, at: Math.round((i / rate) * 1000), of };
    if (kind === "fresh") fresh += 1;
    if (kind === "refund") refunds += 1;
    return planned;
  });
  const [stallDraws] = fc.sample(fc.array(stall, { minLength: 1_000, maxLength: 1_000 }), {
    seed: seed + 2,
    numRuns: 1,
  });
  const faults: PlannedFault[] = [];
  for (let t = 5_000, i = 0; i < faultDraws!.length; i++) {
    const { gapMs, ...f } = faultDraws![i]!;
    if (t > durationMs - 5_000) break;
    faults.push({ ...f, at: t });
    t += gapMs;
  }
  for (let t = 7_000, i = 0; i < stallDraws!.length; i++) {
    const { gapMs, downMs } = stallDraws![i]!;
    if (t > durationMs - 5_000) break;
    faults.push({ kind: "stall_storage", at: t, instance: 0, downMs, count: 1 });
    t += gapMs;
  }
  const [webhookDraws] = fc.sample(fc.array(webhookFault, { minLength: 1_000, maxLength: 1_000 }), {
    seed: seed + 3,
    numRuns: 1,
  });
  for (let t = 6_000, i = 0; i < webhookDraws!.length; i++) {
    const { gapMs, ...f } = webhookDraws![i]!;
    if (t > durationMs - 5_000) break;
    faults.push({ ...f, at: t, instance: 0 });
    t += gapMs;
  }
  faults.sort((a, b) => a.at - b.at);
  const [receiverFates] = fc.sample(
    fc.array(fc.array(receiverFate, { minLength: FATES, maxLength: FATES }), {
      minLength: RECEIVERS,
      maxLength: RECEIVERS,
    }),
    { seed: seed + 4, numRuns: 1 },
  );
  return { seed, operations, faults, receiverFates: receiverFates! };
}
