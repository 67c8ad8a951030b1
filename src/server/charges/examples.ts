/** A charge as the API reference shows it (its `doc.examples`): the values of a real request and answer. */
const id = "ch_8a5b084aa7756bcf50ccc889";

/** The charge as it is created: nothing refunded yet. */
const created = {
  id,
  object: "charge",
  amount_cents: 1999,
  currency: "usd",
  status: "succeeded",
  customer_id: "cus_123",
  failure_code: null,
  gateway_charge_id: "gw_101d1b252f83bfd75f9b0aa1",
  amount_refunded_cents: 0,
  refunds: [] as object[],
  requested_at: "2026-12-06T05:41:05.912Z",
  created_at: "2026-12-06T05:41:05.945Z",
};

export const CHARGE_EXAMPLES = {
  key: "8e03978e-40d5-43e8-bc93-6894a57f9324",
  request: { amount_cents: 1999, currency: "usd", card_token: "tok_visa", customer_id: "cus_123" },
  created,
  /** Read later, after the refund of refunds/examples.ts. */
  read: {
    ...created,
    amount_refunded_cents: 500,
    refunds: [
      {
        id: "re_5f3c2a9d8e7b6a5f4e3d2c1b",
        object: "refund",
        charge: id,
        amount_cents: 500,
        currency: "usd",
        status: "succeeded",
        reason: "requested_by_customer",
        gateway_refund_id: "gwre_7d1e0c9b8a7f6e5d4c3b2a19",
        created_at: "2026-12-06T05:42:10.118Z",
      },
    ],
  },
};
