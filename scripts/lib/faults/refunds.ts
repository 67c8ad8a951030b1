/**
 * The refunds of a fault run: refunds of the run's own charges, sent as clients send them while the faults
 * strike. Keyed ones go through the SDK (`refunds.create`: same key on every attempt, as the charges do); keyless
 * ones and another body under a used key are one attempt. A refund needs its charge's id, which exists only once
 * the charge's operation has stored its answer: a refund learns it from its charging client's answer, or, while
 * that client is still retrying, by settling the charge's key (GET /api/charges?idempotency_key=), as a client
 * that lost its connection would.
 */
import { ChargesClient, OperationDeadlineError } from "@charges/client";
import type { PlannedOperation } from "./plan";
import { type ChargeObservation, type FreshCharge, type Observation, type RefundObservation, send } from "./run";
import { postOnce } from "./postOnce";
import type { FaultStack } from "./stack";

export type RefundBody = {
  charge: string;
  amount_cents?: number;
  reason?: "duplicate" | "requested_by_customer" | "fraudulent";
};

type Launch = <O extends Observation>(observation: O, sending: (o: O) => Promise<void>) => Promise<void>;
type FreshRefund = { key: string; body: RefundBody; client: 0 | 1 };

const REASONS = ["duplicate", "requested_by_customer", undefined] as const;

/** What a refund asks for, from its planned share of the charge's amount. */
function refundBody(op: PlannedOperation, index: number, chargeId: string, charged: number): RefundBody {
  const amount = {
    rest: undefined,
    half: Math.max(1, Math.floor(charged / 2)),
    tenth: Math.max(1, Math.floor(charged / 10)),
    over: charged + 1,
  }[op.refundShare];
  const reason = REASONS[index % REASONS.length];
  return {
    charge: chargeId,
    ...(amount === undefined ? {} : { amount_cents: amount }),
    ...(reason === undefined ? {} : { reason }),
  };
}

export class RefundOperations {
  /** The fresh refund operations ("refund"), in plan order; null when nothing was sent (no charge to refund). */
  private readonly fresh: Promise<FreshRefund | null>[] = [];

  constructor(
    private readonly stack: FaultStack,
    private readonly runId: string,
    private readonly launch: Launch,
  ) {}

  /** Starts one planned refund operation; settles when all of its requests have their answers. */
  start(op: PlannedOperation, index: number, target: FreshCharge | undefined): Promise<void> {
    if (op.kind === "refund_retry" || op.kind === "refund_other_body") return this.again(op, index);
    const begun = this.begin(op, index, target!);
    if (op.kind === "refund") this.fresh.push(begun.then((b) => b.fresh));
    return begun.then((b) => b.done);
  }

  private async begin(op: PlannedOperation, index: number, target: FreshCharge) {
    const observe = (key: string | null, body: RefundBody, kind = op.kind): RefundObservation => ({
      route: "refunds",
      index,
      kind,
      client: target.client,
      key,
      body,
      sentAt: Date.now(),
    });
    const chargeId = await this.chargeIdOf(target, op);
    if (!chargeId) {
      // Its charge's operation ended without an id its client could learn (abandoned, deadline): no refund.
      const none = async (o: RefundObservation) => {
        o.problem = "no charge to refund";
      };
      return { fresh: null, done: this.launch(observe(null, { charge: "" }), none) };
    }
    const body = refundBody(op, index, chargeId, target.body.amount_cents);
    const key = `${this.runId}-${index}`;
    switch (op.kind) {
      case "refund_keyless":
        return { fresh: null, done: this.launch(observe(null, body), (o) => this.once(op, op.instance, o)) };
      case "refund_race": {
        // Different keys (two support agents, an agent and an API client), at once, on both instances.
        const amount_cents = Math.ceil(target.body.amount_cents * 0.4);
        const racing = Array.from({ length: op.count }, (_, j) =>
          this.launch(observe(`${key}-${j}`, { ...body, amount_cents }), (o) =>
            this.keyed(op, ((op.instance + j) % 2) as 0 | 1, o),
          ),
        );
        return { fresh: null, done: Promise.all(racing).then(() => {}) };
      }
      case "refund_during_charge_retry": {
        // The charge's operation again (same key and body) on the other instance, at the same moment.
        const retry: ChargeObservation = { ...target.observation, index, kind: "retry", sentAt: Date.now() };
        for (const k of ["status", "code", "chargeId", "gatewayChargeId", "replayed", "problem", "doneAt"] as const)
          delete retry[k];
        const chargeRetry = { ...op, kind: "retry" as const, instance: (1 - op.instance) as 0 | 1 };
        const both = [
          this.launch(retry, (o) => send(chargeRetry, o, this.stack)),
          this.launch(observe(key, body), (o) => this.keyed(op, op.instance, o)),
        ];
        return { fresh: null, done: Promise.all(both).then(() => {}) };
      }
      default: {
        const done = this.launch(observe(key, body), (o) => this.keyed(op, op.instance, o));
        return { fresh: { key, body, client: target.client }, done };
      }
    }
  }

  /** An earlier refund again: the same key and body (a resumed client), or another amount under its key (422). */
  private async again(op: PlannedOperation, index: number) {
    const original = await this.fresh[op.of];
    if (!original) return;
    const amount = original.body.amount_cents;
    const body =
      op.kind === "refund_other_body"
        ? { ...original.body, amount_cents: amount === 1 ? 2 : (amount ?? 2) - 1 }
        : original.body;
    const o: RefundObservation = {
      route: "refunds",
      index,
      kind: op.kind,
      client: original.client,
      key: original.key,
      body,
      sentAt: Date.now(),
    };
    await this.launch(o, (x) =>
      op.kind === "refund_retry" ? this.keyed(op, op.instance, x) : this.once(op, op.instance, x),
    );
  }

  /**
   * The charge's id, as its client can know it: from its own answer, else by settling its key, else once its
   * client is done. `refund_during_charge_retry` always settles first (it refunds while the charge is retried).
   */
  private async chargeIdOf(target: FreshCharge, op: PlannedOperation): Promise<string | null> {
    if (op.kind !== "refund_during_charge_retry" && target.observation.chargeId) return target.observation.chargeId;
    const settled = await this.settleCharge(target, op.instance);
    if (settled) return settled;
    await target.done;
    return target.observation.chargeId ?? (await this.settleCharge(target, op.instance));
  }

  private async settleCharge(target: FreshCharge, instance: 0 | 1): Promise<string | null> {
    const url = new URL("/api/charges", this.stack.appUrls[instance]);
    url.searchParams.set("idempotency_key", target.key);
    try {
      const res = await fetch(url, {
        headers: { Authorization: `Bearer ${this.stack.apiKeys[target.client]}` },
        signal: AbortSignal.timeout(3_000),
      });
      const json = (await res.json()) as { id?: string; error?: { charge?: string } };
      if (res.status === 201) return json.id ?? null;
      if (res.status === 402) return json.error?.charge ?? null;
      return null;
    } catch {
      return null;
    }
  }

  /** A keyed refund through the SDK, which retries it as it retries charges. */
  private async keyed(op: PlannedOperation, instance: 0 | 1, o: RefundObservation) {
    const client = new ChargesClient({
      baseUrl: this.stack.appUrls[instance]!,
      apiKey: this.stack.apiKeys[o.client]!,
      attemptTimeoutMs: op.attemptTimeoutMs,
      deadlineMs: 20_000,
      preferWaitSeconds: op.preferWaitSeconds,
    });
    try {
      const result = await client.refunds.create(o.body, { idempotencyKey: o.key! });
      o.status = result.status;
      o.replayed = result.replayed;
      if (result.ok) {
        o.refundId = result.refund.id;
        o.amountCents = result.refund.amount_cents;
      } else o.code = result.error.code;
    } catch (error) {
      o.problem = error instanceof OperationDeadlineError ? "deadline" : String(error);
    }
  }

  /** One attempt, no retry: a keyless refund, or another body under a used key. */
  private async once(op: PlannedOperation, instance: 0 | 1, o: RefundObservation) {
    const answer = await postOnce<{
      id?: string;
      amount_cents?: number;
      error?: { code?: string; request_id?: string };
    }>(new URL("/api/refunds", this.stack.appUrls[instance]), {
      apiKey: this.stack.apiKeys[o.client]!,
      key: o.key,
      body: o.body,
      timeoutMs: op.attemptTimeoutMs,
    });
    if ("problem" in answer) {
      o.problem = answer.problem;
      return;
    }
    const { json } = answer;
    o.status = answer.status;
    o.replayed = answer.replayed;
    o.code = json.error?.code;
    o.refundId = json.id;
    o.amountCents = json.amount_cents;
    o.requestId = json.error?.request_id;
  }
}
