import { CHARGE_EXAMPLES } from "~/server/charges/examples";

/** A refund as the API reference shows it (its `doc.examples`): of the example charge, as it lists it. */
const refund = CHARGE_EXAMPLES.read.refunds[0]!;

export const REFUND_EXAMPLES = {
  key: "0b8f4c1e-5d7a-4e2b-9c3f-6a1d2e4f8b90",
  request: { charge: CHARGE_EXAMPLES.created.id, amount_cents: 500, reason: "requested_by_customer" },
  created: refund,
  read: refund,
};
