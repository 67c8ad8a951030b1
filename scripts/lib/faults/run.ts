/**
 * Executes a plan against a fault stack: each operation as a client would send
 * it (the SDK, with short timeouts and retries, for keyed operations), each
 * fault at its time, and records what every client saw.
 */
import * as mariadb from "mariadb";
import { ChargeDeadlineError, ChargesClient } from "@charges/client";
import { GATEWAY_BEHAVIOURS, type FaultKind, type Plan, type PlannedFault, type PlannedOperation } from "./plan";
import { RefundOperations, type RefundBody } from "./refunds";
import { postOnce } from "./postOnce";
import { RUN_TIMINGS, type FaultStack } from "./stack";
import type { Outage } from "./finalInTime";
import type { WebhookReceivers } from "./receivers";
import { RequiredWindows } from "./requiredWindows";
import { stallHoldMs, stallStorage, type StallStats } from "./stallStorage";

type Common = {
  index: number;
  kind: PlannedOperation["kind"];
  client: 0 | 1;
  key: string | null;
  /** The final answer, when there was one (else the deadline passed or the connection failed). */
  status?: number;
  code?: string;
  replayed?: boolean;
  problem?: string;
  /** When the client sent it and when it had its answer (or gave up), ms since the epoch. */
  sentAt?: number;
  doneAt?: number;
};

export type ChargeObservation = Common & {
  route: "charges";
  body: ChargeBody;
  chargeId?: string;
  gatewayChargeId?: string;
};

export type RefundObservation = Common & {
  route: "refunds";
  body: RefundBody;
  refundId?: string;
  /** The amount a 201 names. */
  amountCents?: number;
  /** A keyless refund's handle (502 refund_outcome_unknown). */
  requestId?: string;
};

export type Observation = ChargeObservation | RefundObservation;

export type ChargeBody = { amount_cents: number; currency: string; card_token: string; customer_id: string };

/** A fresh charge operation, as refunds and retries find it. */
export type FreshCharge = {
  key: string;
  body: ChargeBody;
  client: 0 | 1;
  instance: 0 | 1;
  observation: ChargeObservation;
  /** Settles when its client has its final answer (or gave up). */
  done: Promise<void>;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function executePlan(plan: Plan, stack: FaultStack, runId: string, receivers: WebhookReceivers) {
  const started = Date.now();
  const fresh: FreshCharge[] = [];
  const observations: Observation[] = [];
  const faultsDone: Record<FaultKind, number> = {
    kill_app: 0,
    kill_database: 0,
    deadlocks: 0,
    expire_in_flight: 0,
    sweep_and_prune: 0,
    require_header: 0,
    stall_storage: 0,
    receiver_away: 0,
    kill_dispatcher: 0,
  };
  const effects: Effects = {
    deadlocksForced: 0,
    required: new RequiredWindows((client, on) => switchHeader(stack, client, on)),
    ending: [],
    stalls: { gaps: 0, held: 0, mostAtOnce: 0 },
    outages: [],
    receivers,
  };
  const inFlight: Promise<void>[] = [];

  const strikeInTurn = async (faults: PlannedFault[]) => {
    for (const fault of faults) {
      await sleep(Math.max(0, started + fault.at - Date.now()));
      await strike(fault, stack, effects).catch((e) =>
        console.error(`fault ${fault.kind} failed: ${(e as Error).message}`),
      );
      faultsDone[fault.kind] += 1;
    }
  };
  // Stalls and webhook faults keep their own time: a restart that takes long on a loaded machine must not push
  // them past the load.
  const webhookFaults: FaultKind[] = ["receiver_away", "kill_dispatcher"];
  const ownTime: FaultKind[] = ["stall_storage", ...webhookFaults];
  const faultLoop = Promise.all([
    strikeInTurn(plan.faults.filter((f) => !ownTime.includes(f.kind))),
    strikeInTurn(plan.faults.filter((f) => f.kind === "stall_storage")),
    strikeInTurn(plan.faults.filter((f) => webhookFaults.includes(f.kind))),
  ]);

  /** Starts one observed request; `sending` fills in its answer. */
  const launch = <O extends Observation>(observation: O, sending: (o: O) => Promise<void>) => {
    observations.push(observation);
    const done = sending(observation)
      .catch((e) => {
        observation.problem = String(e);
      })
      .finally(() => {
        observation.doneAt = Date.now();
      });
    inFlight.push(done);
    return done;
  };
  const refunds = new RefundOperations(stack, runId, launch);

  for (const [index, op] of plan.operations.entries()) {
    await sleep(Math.max(0, started + op.at - Date.now()));
    if (op.kind.startsWith("refund")) {
      const target = fresh[op.of];
      inFlight.push(refunds.start(op, index, target));
      continue;
    }
    let key: string | null;
    let body: ChargeBody;
    let client = op.client;
    const newBody = () => ({
      amount_cents: op.amountCents,
      currency: "usd",
      card_token: GATEWAY_BEHAVIOURS[op.behaviour],
      customer_id: `cus_${runId}_${index}`,
    });
    if (op.kind === "fresh") {
      key = `${runId}-${index}`;
      body = newBody();
    } else if (op.kind === "keyless") {
      key = null;
      body = newBody();
    } else {
      const original = fresh[op.of]!;
      key = original.key;
      body =
        op.kind === "other_body" ? { ...original.body, amount_cents: original.body.amount_cents + 1 } : original.body;
      client = op.kind === "other_client" ? ((1 - original.client) as 0 | 1) : original.client;
    }
    const observation: ChargeObservation = {
      route: "charges",
      index,
      kind: op.kind,
      client,
      key,
      body,
      sentAt: Date.now(),
    };
    const done = launch(observation, (o) => send(op, o, stack));
    if (op.kind === "fresh") fresh.push({ key: key!, body, client, observation, done, instance: op.instance });
  }
  await Promise.all(inFlight);
  await faultLoop;
  await Promise.all(effects.ending);
  const { deadlocksForced, required, stalls, outages } = effects;
  const requiredWindows = required.windows;
  const durationMs = Date.now() - started;
  return { observations, faultsDone, deadlocksForced, requiredWindows, stalls, outages, durationMs };
}

/** One charge operation as its client sends it. */
export async function send(op: PlannedOperation, o: ChargeObservation, stack: FaultStack) {
  const baseUrl = stack.appUrls[op.instance]!;
  const apiKey = stack.apiKeys[o.client]!;
  if (o.key !== null && (op.kind === "fresh" || op.kind === "retry")) {
    const client = new ChargesClient({
      baseUrl,
      apiKey,
      attemptTimeoutMs: op.attemptTimeoutMs,
      deadlineMs: 20_000,
      preferWaitSeconds: op.preferWaitSeconds,
    });
    try {
      const result = await client.createCharge(o.body, { idempotencyKey: o.key });
      o.status = result.status;
      o.replayed = result.replayed;
      if (result.ok) {
        o.chargeId = result.charge.id;
        o.gatewayChargeId = result.charge.gateway_charge_id;
      } else {
        o.code = result.error.code;
        if (typeof result.error.charge === "string") o.chargeId = result.error.charge;
      }
    } catch (error) {
      o.problem = error instanceof ChargeDeadlineError ? "deadline" : String(error);
    }
    return;
  }
  // A reuse of another operation's key, or a keyless request: one attempt, no retry.
  const answer = await postOnce<{
    id?: string;
    gateway_charge_id?: string;
    error?: { code?: string; charge?: string };
  }>(new URL("/api/charges", baseUrl), { apiKey, key: o.key, body: o.body, timeoutMs: op.attemptTimeoutMs });
  if ("problem" in answer) {
    o.problem = answer.problem;
    return;
  }
  const { json } = answer;
  o.status = answer.status;
  o.replayed = answer.replayed;
  o.code = json.error?.code;
  o.chargeId = json.id ?? json.error?.charge;
  o.gatewayChargeId = json.gateway_charge_id;
}

async function onPrivateDatabase(stack: FaultStack, sql: string) {
  const conn = await privateDatabase(stack);
  try {
    await conn.query(sql);
  } finally {
    await conn.end().catch(() => {});
  }
}

/** The rollout switch for one client, as an engineer's would be; off again and again if need be (a database down). */
async function switchHeader(stack: FaultStack, client: 0 | 1, on: boolean) {
  const sql = `UPDATE api_clients SET key_required_since = ${on ? "UTC_TIMESTAMP(6)" : "NULL"}
    WHERE id = (SELECT id FROM (SELECT id FROM api_clients ORDER BY id LIMIT 1 OFFSET ${client}) c)`;
  for (let tries = 0; ; tries++) {
    try {
      return await onPrivateDatabase(stack, sql);
    } catch (error) {
      if (!on && tries < 60) await sleep(500);
      else
        throw new Error(`require_header: the header could not be switched ${on ? "on" : "back off"}`, { cause: error });
    }
  }
}

async function privateDatabase(stack: FaultStack) {
  return mariadb.createConnection({
    host: "127.0.0.1",
    port: stack.database.port,
    user: "root",
    database: "charges_faults",
  });
}

type Effects = {
  deadlocksForced: number;
  required: RequiredWindows;
  ending: Promise<void>[];
  stalls: StallStats;
  /** When the app's database was down: no answer could be stored then (finalInTime.ts). */
  outages: Outage[];
  receivers: WebhookReceivers;
};

async function strike(fault: PlannedFault, stack: FaultStack, effects: Effects) {
  switch (fault.kind) {
    case "kill_app":
      return stack.crashApp(fault.instance, fault.downMs);
    case "kill_database": {
      const from = Date.now();
      try {
        return await stack.crashDatabase(fault.downMs);
      } finally {
        effects.outages.push({ from, to: Date.now() });
      }
    }
    case "deadlocks":
      for (let i = 0; i < fault.count; i++) effects.deadlocksForced += await closeLockCycles(stack);
      return;
    case "expire_in_flight": {
      // Keys expiring mid-flight: an in-progress record past its lifetime must still be finished, never deleted.
      const conn = await privateDatabase(stack);
      await conn.query(
        `UPDATE idempotent_requests SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND
          WHERE state = 'in_progress' ORDER BY id DESC LIMIT ?`,
        [fault.count * 3],
      );
      await conn.end();
      return;
    }
    case "require_header": {
      // The rollout switched on for one client for 5-15 s, then off, while the next faults strike: its keyless
      // requests meanwhile are refused and their claims withdrawn (deleted before any work).
      const { ending } = await effects.required.require(fault.instance, 5_000 + fault.downMs * 4);
      effects.ending.push(ending);
      return;
    }
    case "stall_storage": {
      // Held 1-10 s past the time a held operation needs to be written off, while the next faults strike.
      const { ending } = await stallStorage(stack, stallHoldMs(RUN_TIMINGS, fault.downMs * 4), effects.stalls);
      effects.ending.push(ending);
      return;
    }
    case "receiver_away":
      // Away for 0.9-7.5 s: connections refused, then retried by the dispatcher's backoff.
      return effects.receivers.away(fault.downMs * 3);
    case "kill_dispatcher":
      return stack.crashDispatchers(fault.downMs, fault.count);
    case "sweep_and_prune": {
      // Beside the background sweeper: more sweeps and prunes at the same time.
      const { runSweep } = await import("~/server/sweep/runSweep");
      const { pruneExpired } = await import("~/server/sweep/pruneExpired");
      await Promise.all([runSweep(), runSweep({ reconcile: false }), pruneExpired()]);
      return;
    }
  }
}

/**
 * Forces deadlocks on completions: an outside transaction, heavier than any
 * completion (ballast rows), holds the API client rows that a charge INSERT's
 * foreign-key check needs, then asks for the in-progress records, which a
 * completion locks first. Every completion caught between the two is a
 * deadlock victim (1213) and must be retried whole, never half-committed.
 */
async function closeLockCycles(stack: FaultStack): Promise<number> {
  const conn = await privateDatabase(stack);
  const deadlocks = async () =>
    Number(((await conn.query("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")) as { Value: string }[])[0]?.Value ?? 0);
  try {
    const before = await deadlocks();
    await conn.query("CREATE TABLE IF NOT EXISTS fault_ballast (n INT) ENGINE=InnoDB");
    await conn.query("SET SESSION innodb_lock_wait_timeout = 2");
    await conn.query("BEGIN");
    await conn.query(`INSERT INTO fault_ballast VALUES ${Array.from({ length: 300 }, (_, i) => `(${i})`).join(",")}`);
    await conn.query("SELECT id FROM api_clients ORDER BY id FOR UPDATE");
    await sleep(250);
    const inProgress: { id: bigint }[] = await conn.query(
      "SELECT id FROM idempotent_requests WHERE state = 'in_progress' ORDER BY id DESC LIMIT 20",
    );
    if (inProgress.length > 0) {
      await conn
        .query(`SELECT id FROM idempotent_requests WHERE id IN (${inProgress.map((r) => r.id).join(",")}) FOR UPDATE`)
        .catch(() => {});
    }
    await conn.query("ROLLBACK");
    return (await deadlocks()) - before;
  } finally {
    await conn.end().catch(() => {});
  }
}
