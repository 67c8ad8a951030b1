import type { MoneyOperation } from "~/server/operations/moneyOperation";
import { chargeOnGateway, settleFromGateway } from "./gatewayWork";
import { createChargeSchema, fieldsToShow, type CreateChargeInput } from "./schema";
import { CHARGE_EXAMPLES } from "./examples";

/** The route name stored with every charge's record; part of the unique (key, route). */
export const CHARGES_ROUTE = "POST /api/charges";

/** POST /api/charges as the idempotency layer runs it. */
export const chargeOperation: MoneyOperation<CreateChargeInput> = {
  route: CHARGES_ROUTE,
  schema: createChargeSchema,
  shown: (body, input) => ({ customerId: input.customer_id, fields: fieldsToShow(body) }),
  work: chargeOnGateway,
  settle: settleFromGateway,
  unknownOutcome: "charge_outcome_unknown",
  moneyTable: "charges",
  doc: {
    object: "Charge",
    summary: "Create a charge",
    description: "Charges a card once per Idempotency-Key, however often the request is retried.",
    created: "Charged.",
    errors: ["card_declined", "charge_outcome_unknown"],
    examples: CHARGE_EXAMPLES,
  },
};
