import type { z } from "zod";
import type { ApiErrorCode, ErrorDetails } from "~/server/http/apiError";
import type { Statement } from "~/server/db";
import type { HeldClaim, WorkResult } from "~/server/idempotency";

/** A refusal decided before any key is claimed: nothing is stored, and the key stays usable. */
export type Refusal = { code: ApiErrorCode; message?: string; details?: ErrorDetails };

/**
 * A money-moving POST, as the idempotency layer runs it (submitOperation.ts). Adding a route is one of these in
 * its domain module, one route file (`moneyRoute(operation)`) and one line in src/server/moneyRoutes.ts.
 */
export type MoneyOperation<Input> = {
  /** Stored with every record: part of the unique (key, route), so one key on two routes is two operations. */
  route: string;
  /** The body; unknown fields are rejected, so a typo never turns into a silently different operation. */
  schema: z.ZodType<Input>;
  /** What the dashboard shows of the request (never a secret), stored with the claim; never used to decide. */
  shown: (
    body: Record<string, unknown>,
    input: Input,
  ) => { customerId: string | null; fields: Record<string, unknown> };
  /**
   * A refusal that needs the database but no claim (a refund of a charge that cannot be refunded), asked before
   * claiming when the claim makes no writes of the operation's own (keyless requests, or no `atClaim`).
   */
  precheck?: (apiClientId: number, input: Input) => Promise<Refusal | null>;
  /**
   * Writes made with a keyed operation's record, at its claim's commit (idempotency: ClaimInput.atClaim), whose
   * rows reach `work` as `held.atClaim` when its claim made the record (a refund's hold). They decide the
   * precheck's refusals themselves, under their locks: writes that decline leave nothing.
   */
  atClaim?: (apiClientId: number, input: Input) => Statement;
  /**
   * The answer to an operation declined by its claim's writes or by its work (WorkResult `declined`), from their
   * rows: nothing of it was stored, and its key stays usable.
   */
  refusal?: (apiClientId: number, input: Input, rows: unknown[]) => Promise<Refusal>;
  /**
   * The work under a held claim: one gateway call under the derived key, and the rows to store with the answer;
   * or a decline, when it finds before any gateway call that the operation cannot be made.
   */
  work: (held: HeldClaim, input: Input) => Promise<WorkResult>;
  /** What happened to an operation nobody finished, asked of the gateway without creating anything. */
  settle: (held: HeldClaim) => Promise<WorkResult>;
  /** A keyless request whose outcome is unknown is answered this, with its record as the handle. */
  unknownOutcome: ApiErrorCode;
};
