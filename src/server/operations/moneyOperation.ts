import type { z } from "zod";
import type { ApiErrorCode, ErrorDetails } from "~/server/http/apiError";
import type { Statement } from "~/server/db";
import type { HeldClaim, WorkResult } from "~/server/idempotency";

/** A refusal decided before any key is claimed: nothing is stored, and the key stays usable. */
export type Refusal = { code: ApiErrorCode; message?: string; details?: ErrorDetails };

/** How the API reference (src/server/openapi.ts) describes a money route; its paths are generated from it. */
export type MoneyRouteDoc = {
  /** Names its schemas (`Create<Object>`, `<Object>`) and its operations (`create<Object>`, `get<Object>`...). */
  object: string;
  summary: string;
  description: string;
  /** What its 201 means. */
  created: string;
  /** The codes of this route's own work; those marked `stored` are also what its settling GET can answer. */
  errors: ApiErrorCode[];
  /**
   * Real values for the reference's examples and samples (src/server/openapiExamples.ts): a key, a request, the
   * object it creates and the object as read later. test/docsSamples.test.ts runs the samples made of them.
   */
  examples: {
    key: string;
    request: Record<string, unknown>;
    created: { id: string } & Record<string, unknown>;
    read: { id: string } & Record<string, unknown>;
  };
};

/**
 * Writes of a keyed operation's own made with its record, at its claim's commit (idempotency: ClaimInput.atClaim),
 * whose rows reach `work` as `held.atClaim` when its claim made the record (a refund's hold); and the answer when
 * they, or the work, decline it: nothing of it was stored, and its key stays usable.
 */
export type Declines<Input> = {
  /** The writes; they decide the precheck's refusals themselves, under their locks: declining, they leave nothing. */
  atClaim: (apiClientId: number, input: Input) => Statement;
  /** The answer to one declined by its claim's writes or by its work (WorkResult `declined`), from their rows. */
  refusal: (apiClientId: number, input: Input, rows: unknown[]) => Promise<Refusal>;
};

/**
 * A money-moving POST, as the idempotency layer runs it (submitOperation.ts), with what the rest of the app needs
 * to know of it: its documentation and where its money rows are. Adding a route is one of these in its domain
 * module, one route file (`moneyRoute(operation)`) and one line in src/server/moneyRoutes.ts.
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
   * claiming when the claim makes no writes of the operation's own (keyless requests, or no `declines`).
   */
  precheck?: (apiClientId: number, input: Input) => Promise<Refusal | null>;
  /** How it declines, if it can (a refund: its hold, made with the claim). */
  declines?: Declines<Input>;
  /**
   * The work under a held claim: one gateway call under the derived key, and the rows to store with the answer;
   * or a decline, when it finds before any gateway call that the operation cannot be made.
   */
  work: (held: HeldClaim, input: Input) => Promise<WorkResult>;
  /** What happened to an operation nobody finished, asked of the gateway without creating anything. */
  settle: (held: HeldClaim) => Promise<WorkResult>;
  /** A keyless request whose outcome is unknown is answered this, with its record as the handle. */
  unknownOutcome: ApiErrorCode;
  /** The table of its money rows: every 201 it stores names one of them (ledger/invariants.ts). */
  moneyTable: "charges" | "refunds";
  doc: MoneyRouteDoc;
};
