import type { RefundReason } from "~/generated/prisma/client";
import { compoundRows, queryRows, retryOnLockConflict, type Statement } from "~/server/db";
import { attemptFence, type IdempotencyRecord } from "~/server/idempotency";

/** What a refund operation holds on its charge, from before its gateway call until its answer is stored. */
export type Hold = {
  recordId: bigint;
  chargeId: string;
  gatewayChargeId: string;
  amountCents: number;
  currency: string;
  reason: RefundReason | null;
};

type HoldRow = { amount_cents: number; reason: RefundReason | null };

/** What the hold read under the charge's lock; `charged` null: no succeeded charge of this client by that id. */
export type HoldDecision = {
  charged: number | null;
  refunded: number | null;
  held: number | null;
  currency: string | null;
  gateway_charge_id: string | null;
  own: number | null;
  own_reason: RefundReason | null;
  /** 0: the record was no longer this attempt's when the charge was locked (holdBlock's fence). */
  ours: number;
};

type HoldRequest = { charge: string; amount_cents?: number; reason?: RefundReason };

/** The work's hold reads its record first (idempotency: attemptFence). */
const FENCE = attemptFence("v_ours");

/**
 * The hold, decided in the server in one round trip (seven round trips as separate statements made a refund a
 * quarter slower than a charge: bench README), as a block that runs inside a transaction: reads the charge under
 * its row lock, then the operation's own hold; holds `wanted` (or what is left) only if it fits. Ends with a
 * SELECT of what it read and the operation's hold, if it has one now. The record is one sent by id (`?`), or the
 * one being made in the same transaction (`atClaim`, idempotency: ClaimInput.atClaim), which has no hold to look
 * for yet. Made with the record, it does not wait for a charge another transaction has locked: the record would
 * stay invisible to retries and lookups until the wait ended; the claim is then made alone and the work holds.
 * Nor does it make a record of a refund it cannot hold: it declines it (insertThen), and nothing is stored.
 */
function holdBlock({ atClaim }: { atClaim: boolean }) {
  const recordId = atClaim ? "v_inserted_id" : "?";
  // NOWAIT is refused inside a compound statement; a lock wait timeout of 0 is the same.
  const noWait = atClaim ? "SET STATEMENT innodb_lock_wait_timeout = 0 FOR" : "";
  const ownHold = atClaim
    ? ""
    : "SELECT amount_cents, reason INTO v_own, v_reason FROM refund_holds WHERE idempotent_request_id = ?;";
  // A stalled attempt (its wait for the charge outlasted its lease) must not hold for a record taken over, written
  // off or withdrawn meanwhile: a hold nobody would end, or a second gateway key for the operation.
  const fence = atClaim ? "" : `${FENCE.sql};`;
  return `BEGIN
    DECLARE v_charged, v_refunded, v_held, v_own, v_wanted INT DEFAULT NULL;
    DECLARE v_ours INT DEFAULT 1;
    DECLARE v_reason VARCHAR(32) DEFAULT NULL;
    DECLARE v_currency CHAR(3) DEFAULT NULL;
    DECLARE v_gateway VARCHAR(64) DEFAULT NULL;
    ${noWait} SELECT amount_cents, amount_refunded_cents, refund_held_cents, currency, gateway_charge_id
      INTO v_charged, v_refunded, v_held, v_currency, v_gateway
      FROM charges WHERE id = ? AND api_client_id = ? AND status = 'succeeded' FOR UPDATE;
    ${fence}
    IF v_charged IS NOT NULL AND v_ours = 1 THEN
      ${ownHold}
      IF v_own IS NULL THEN
        SET v_wanted = COALESCE(?, v_charged - v_refunded - v_held);
        IF v_wanted > 0 AND v_wanted <= v_charged - v_refunded - v_held THEN
          INSERT INTO refund_holds (idempotent_request_id, charge_id, amount_cents, reason)
            VALUES (${recordId}, ?, v_wanted, ?);
          UPDATE charges SET refund_held_cents = refund_held_cents + v_wanted WHERE id = ?;
          SET v_own = v_wanted, v_reason = ?;
        END IF;
      END IF;
    END IF;
    ${atClaim ? "IF v_own IS NULL THEN SET v_declined = TRUE; END IF;" : ""}
    SELECT v_charged AS charged, v_refunded AS refunded, v_held AS held, v_currency AS currency,
           v_gateway AS gateway_charge_id, v_own AS own, v_reason AS own_reason, v_ours AS ours;
  END`;
}

/** holdBlock's values in the order of its `?`s; `record` is null when the record is the one being made. */
function holdValues(record: { id: bigint; attempt: number } | null, apiClientId: number, request: HoldRequest) {
  const reason = request.reason ?? null;
  const id = record === null ? [] : [record.id];
  return [
    request.charge,
    apiClientId,
    ...(record === null ? [] : FENCE.values(record)),
    ...id, // the own hold's read
    request.amount_cents ?? null,
    ...id, // the hold's record
    request.charge,
    reason,
    request.charge,
    reason,
  ];
}

/** The hold as its own transaction, for an operation whose record exists already (a take-over, a keyless one). */
const HOLD_SQL = `BEGIN NOT ATOMIC
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; SET autocommit = 1; RESIGNAL; END;
  SET autocommit = 0;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  ${holdBlock({ atClaim: false })};
  COMMIT;
  SET autocommit = 1;
END`;

/**
 * The hold made with the operation's record, in its claim's transaction (one commit for both; ClaimInput.atClaim):
 * a keyed refund's common case, one round trip and one commit fewer than holding after the claim.
 */
export const holdAtClaim = (apiClientId: number, request: HoldRequest): Statement => ({
  sql: holdBlock({ atClaim: true }),
  values: holdValues(null, apiClientId, request),
});

/**
 * Refused: what the hold read (none when it read nothing), for the refusal (refusals.ts, refusalOfHold). Lost:
 * the record is no longer this attempt's, which holds nothing.
 */
type Holding =
  | { kind: "held"; hold: Hold }
  | { kind: "refused"; decision: HoldDecision | undefined }
  | { kind: "lost" };

/**
 * Holds the refund's amount on its charge before the gateway is called: under the charge's row lock, the
 * database decides whether refunded + held + this amount stays within the charge, so that refunds racing with
 * different keys can never both pass the limit. A retry of the same operation finds its own hold. Without an
 * amount, the hold is what is left then. Refused when it cannot hold: no succeeded charge of the client by that
 * id, or not enough left. Lost when the record stopped being this attempt's before the charge's lock came (holdBlock's
 * fence). `atClaim`: the rows of the hold made with the record (holdAtClaim), when this attempt's claim made it.
 */
export async function holdAmount(
  record: IdempotencyRecord,
  request: HoldRequest,
  atClaim?: unknown[],
): Promise<Holding> {
  const [d] =
    (atClaim as HoldDecision[] | undefined) ??
    (await retryOnLockConflict(() =>
      compoundRows<HoldDecision>({ sql: HOLD_SQL, values: holdValues(record, record.apiClientId, request) }),
    ));
  if (d && Number(d.ours) !== 1) return { kind: "lost" };
  if (!d || d.charged === null || d.own === null) return { kind: "refused", decision: d };
  const hold: Hold = {
    recordId: record.id,
    chargeId: request.charge,
    gatewayChargeId: d.gateway_charge_id!,
    amountCents: Number(d.own),
    currency: d.currency!,
    reason: d.own_reason,
  };
  return { kind: "held", hold };
}

/** The hold of a refund operation, if it got as far as holding (a sweeper's question: no hold, no gateway call). */
export async function findHold(record: IdempotencyRecord): Promise<Hold | null> {
  const [row] = await queryRows<HoldRow & { charge_id: string; currency: string; gateway_charge_id: string }>({
    sql: `SELECT h.amount_cents, h.reason, h.charge_id, c.currency, c.gateway_charge_id
            FROM refund_holds h JOIN charges c ON c.id = h.charge_id WHERE h.idempotent_request_id = ?`,
    values: [record.id],
  });
  if (!row) return null;
  return {
    recordId: record.id,
    chargeId: row.charge_id,
    gatewayChargeId: row.gateway_charge_id,
    amountCents: row.amount_cents,
    currency: row.currency,
    reason: row.reason,
  };
}

/**
 * The hold ends with the operation's answer, in its transaction: refunded (the amount moves from held to
 * refunded) or proven not made (given back). Each statement touches one row, as `atomically` requires; the
 * hold row's DELETE is what proves it was still held (nothing is committed if it was not), so the charge's
 * update needs no join to it (a multi-table UPDATE cost MariaDB more than both of these).
 */
export function endHold(hold: Hold, refunded: boolean): Statement[] {
  return [
    { sql: "DELETE FROM refund_holds WHERE idempotent_request_id = ?", values: [hold.recordId] },
    {
      sql: `UPDATE charges
               SET amount_refunded_cents = amount_refunded_cents + ?, refund_held_cents = refund_held_cents - ?
             WHERE id = ?`,
      values: [refunded ? hold.amountCents : 0, hold.amountCents, hold.chargeId],
    },
  ];
}
