import { db } from "~/server/db";
import { gateway } from "~/server/gateway";

/** The setting that names this database's gateway account, recorded at the first reconciliation. */
const SETTING = "gateway_identity";

/** The configured gateway is not this database's: a reconciliation with it would report its money as ours. */
export class ForeignGatewayError extends Error {
  constructor(why: string) {
    super(
      `${why}. Nothing was reconciled or stored: point GATEWAY_URL (or STRIPE_SECRET_KEY) at this database's gateway.`,
    );
    this.name = "ForeignGatewayError";
  }
}

/**
 * The reconciliation compares this database with its own gateway only. The gateway's account id is recorded at
 * the first reconciliation, and only once the gateway knows this database's newest charge (or there is none
 * yet): a first run pointed at another stack's gateway refuses rather than recording that one. Every later run
 * refuses a gateway with another id. Throws ForeignGatewayError, before anything is stored.
 */
export async function checkGatewayIdentity(): Promise<void> {
  const current = await gateway.identity();
  const recorded = await db.setting.findUnique({ where: { name: SETTING } });
  if (recorded) {
    if (recorded.value === current) return;
    throw new ForeignGatewayError(
      `This database's gateway is account ${recorded.value}; the configured one is ${current}`,
    );
  }
  const newest = await db.charge.findFirst({ where: { status: "succeeded" }, orderBy: { createdAt: "desc" } });
  if (newest) {
    // As the charge's own operation would be asked: a lookup that lags (Stripe's search) says "unproven" while
    // the charge is young, and a young one is read from the strongly consistent list.
    const lookup = await gateway.findCharge({
      idempotencyKey: newest.gatewayIdempotencyKey,
      metadata: { requestId: "", apiClientId: String(newest.apiClientId), idempotencyKey: null },
      lastAttemptAt: newest.createdAt,
      firstAttemptAt: newest.createdAt,
    });
    if (lookup.kind === "not_charged") {
      throw new ForeignGatewayError(
        `The configured gateway (account ${current}) has no trace of this database's newest charge ${newest.id}`,
      );
    }
    if (lookup.kind === "unproven") return; // it cannot tell yet: recorded by a later run
  }
  await db.setting.createMany({ data: [{ name: SETTING, value: current }], skipDuplicates: true });
  const winner = await db.setting.findUniqueOrThrow({ where: { name: SETTING } });
  if (winner.value !== current) {
    throw new ForeignGatewayError(
      `This database's gateway is account ${winner.value}; the configured one is ${current}`,
    );
  }
}
