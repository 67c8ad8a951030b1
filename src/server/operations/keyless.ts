import type { Admission } from "~/server/idempotency";
import { keylessCountStatement } from "~/server/rollout/counters";
import { keylessModeStatement, modeOfRows } from "~/server/rollout/mode";

/**
 * The rollout's condition on a keyless claim (runIdempotent's Admission): the mode, read in the same socket
 * write as the claim's INSERT, so that an admitted keyless request costs no more round trips than a keyed one.
 * Refused, its claim is withdrawn and the request counted as refused, in one transaction. (Admitted, it is counted
 * by the transaction that completes its record: completion.ts.)
 */
export function keylessAdmission(apiClientId: number, route: string): Admission {
  return {
    read: keylessModeStatement(apiClientId),
    admits: (rows) => modeOfRows(rows) === "optional",
    refusalWrites: () => [keylessCountStatement(apiClientId, route, new Date(), { refused: true })],
  };
}
