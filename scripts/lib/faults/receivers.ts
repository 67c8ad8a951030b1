/**
 * The fault run's webhook receivers: three endpoints registered through the API before the load (client 0: every
 * type, and a subset; client 1: every type), each posting to a receiver of its own (scripts/lib/webhookReceiver.ts:
 * verifies with `standardwebhooks`, deduplicates by event id in its own database) that misbehaves as the plan says
 * (receiverFates: 500s, dropped sockets, slow answers, some past the dispatcher's timeout) and goes away when a
 * receiver_away fault strikes, until the run heals it for the drain.
 */
import { slotPort } from "../config";
import { type Behaviour, closeReceiverDatabase, type Receiver, startReceiver } from "../webhookReceiver";
import { type Plan, RECEIVERS, type ReceiverFate } from "./plan";
import { type FaultStack, WEBHOOK_TIMINGS } from "./stack";

/** Who subscribes to what: one endpoint per receiver, in the order of the plan's receiverFates. */
export const RUN_ENDPOINTS: { client: 0 | 1; types: string[] }[] = [
  { client: 0, types: ["*"] },
  { client: 0, types: ["charge.succeeded", "refund.succeeded", "operation.written_off"] },
  { client: 1, types: ["*"] },
];
if (RUN_ENDPOINTS.length !== RECEIVERS) throw new Error("one endpoint per planned receiver");

/** The receivers' ports: offsets of this slot's gateway band that nothing else takes (scripts/lib/config.ts). */
const RECEIVER_PORT_OFFSETS = [11, 13, 14];

export type RunEndpoint = { id: string; client: 0 | 1; types: string[]; receiverName: string; receiver: Receiver };

export type WebhookReceivers = Awaited<ReturnType<typeof startWebhookReceivers>>;

export async function startWebhookReceivers(plan: Plan, stack: FaultStack, runId: string) {
  const timeoutMs = Number(WEBHOOK_TIMINGS.WEBHOOK_TIMEOUT_MS);
  const dealt: Record<ReceiverFate["kind"], number> = { ok: 0, fail: 0, drop: 0, slow: 0, past_timeout: 0 };
  let healed = false;
  const behaviourOf =
    (fates: ReceiverFate[]) =>
    (n: number): Behaviour => {
      if (healed) return "ok";
      const fate = fates[(n - 1) % fates.length]!;
      dealt[fate.kind] += 1;
      if (fate.kind === "slow") return { slowMs: fate.slowMs };
      if (fate.kind === "past_timeout") return { slowMs: timeoutMs + fate.slowMs };
      return fate.kind;
    };
  const endpoints: RunEndpoint[] = [];
  try {
    for (const [i, { client, types }] of RUN_ENDPOINTS.entries()) {
      const secrets: string[] = [];
      const receiverName = `${runId}-r${i}`;
      const receiver = await startReceiver(receiverName, {
        secrets: () => secrets,
        behave: behaviourOf(plan.receiverFates[i]!),
        port: slotPort.gateway(RECEIVER_PORT_OFFSETS[i]!),
        databaseUrl: stack.receiverDatabaseUrl,
      });
      endpoints.push({ id: "", client, types, receiverName, receiver });
      const res = await fetch(new URL("/api/webhook_endpoints", stack.appUrls[0]), {
        method: "POST",
        headers: { authorization: `Bearer ${stack.apiKeys[client]}`, "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url, enabled_events: types }),
      });
      const made = (await res.json()) as { id: string; secret: string };
      if (res.status !== 201) throw new Error(`webhook endpoint not made: ${res.status} ${JSON.stringify(made)}`);
      secrets.push(made.secret);
      endpoints[i]!.id = made.id;
    }
  } catch (error) {
    for (const e of endpoints) await e.receiver.close();
    await closeReceiverDatabase();
    throw error;
  }
  return {
    endpoints,
    /** How many requests got each fate while the plan ruled. */
    dealt,
    /** Every receiver stops listening for `downMs`. */
    async away(downMs: number) {
      await Promise.all(endpoints.map((e) => e.receiver.away()));
      await new Promise((r) => setTimeout(r, downMs));
      await Promise.all(endpoints.map((e) => e.receiver.back()));
    },
    /** The end of the faults: every receiver listens and answers every request at once. */
    async heal() {
      healed = true;
      await Promise.all(endpoints.map((e) => e.receiver.back()));
    },
    /** Stops listening; waits for the requests in hand, so that what they process is counted. */
    close: () => Promise.all(endpoints.map((e) => e.receiver.close())),
    closeDatabase: closeReceiverDatabase,
  };
}
