import type { Charge, Refund } from "~/generated/prisma/client";
import { serializeCharge } from "~/server/charges/responses";
import { queryRows } from "~/server/db";
import { serializeRefund } from "~/server/refunds/responses";
import {
  badParameter,
  createdConditions,
  listBody,
  type ListQuery,
  pageOf,
  parseListQuery,
} from "~/server/http/listQuery";

/**
 * GET /api/charges and GET /api/refunds without a key: a client's own rows, newest first (created_at, then id),
 * paged by cursor. Each filter has an index that starts with the client (no scan of other clients' rows:
 * test/lists.test.ts reads the plans); the cursor is the (created_at, id) of a row of the client's own.
 */
type Table = {
  name: "charges" | "refunds";
  url: string;
  /** The query parameter that filters on a column, and the column. */
  filter: { parameter: "customer" | "charge"; column: "customer_id" | "charge_id" };
  columns: string;
};

const CHARGES: Table = {
  name: "charges",
  url: "/api/charges",
  filter: { parameter: "customer", column: "customer_id" },
  columns: `id, api_client_id AS apiClientId, customer_id AS customerId, amount_cents AS amountCents, currency,
            status, failure_code AS failureCode, gateway_charge_id AS gatewayChargeId,
            amount_refunded_cents AS amountRefundedCents, requested_at AS requestedAt, created_at AS createdAt`,
};

const REFUNDS: Table = {
  name: "refunds",
  url: "/api/refunds",
  filter: { parameter: "charge", column: "charge_id" },
  columns: `id, charge_id AS chargeId, api_client_id AS apiClientId, amount_cents AS amountCents, currency, reason,
            gateway_refund_id AS gatewayRefundId, created_at AS createdAt`,
};

async function cursorOf(table: Table, apiClientId: number, id: string, parameter: string) {
  const [row] = await queryRows<{ createdAt: Date }>({
    sql: `SELECT created_at AS createdAt FROM ${table.name} WHERE id = ? AND api_client_id = ?`,
    values: [id, apiClientId],
  });
  if (!row) throw badParameter(parameter, `names no ${table.name.slice(0, -1)} of yours`);
  return { createdAt: row.createdAt, id };
}

async function listRows<Row>(table: Table, apiClientId: number, search: URLSearchParams, query: ListQuery) {
  const conditions = ["api_client_id = ?"];
  const values: unknown[] = [apiClientId];
  const filterValue = search.get(table.filter.parameter);
  if (filterValue !== null) {
    conditions.push(`${table.filter.column} = ?`);
    values.push(filterValue);
  }
  const created = createdConditions("created_at", query.created);
  conditions.push(...created.conditions);
  values.push(...created.values);
  const after = query.startingAfter ?? query.endingBefore;
  const older = query.endingBefore === null;
  if (after !== null) {
    const cursor = await cursorOf(table, apiClientId, after, older ? "starting_after" : "ending_before");
    const op = older ? "<" : ">";
    conditions.push(`(created_at ${op} ? OR (created_at = ? AND id ${op} ?))`);
    values.push(cursor.createdAt, cursor.createdAt, cursor.id);
  }
  const order = older ? "DESC" : "ASC";
  return queryRows<Row>({
    sql: `SELECT ${table.columns} FROM ${table.name} WHERE ${conditions.join(" AND ")}
          ORDER BY created_at ${order}, id ${order} LIMIT ${query.limit + 1}`,
    values,
  });
}

export async function listCharges(apiClientId: number, search: URLSearchParams): Promise<string> {
  const query = parseListQuery(search);
  const rows = await listRows<Omit<Charge, "idempotentRequestId">>(CHARGES, apiClientId, search, query);
  const page = pageOf(rows, query);
  // A charge as GET /api/charges/{id} shows it, with its refunds (one more query for the page's).
  const ids = page.rows.map((c) => c.id);
  const refunds =
    ids.length === 0
      ? []
      : await queryRows<Refund>({
          sql: `SELECT ${REFUNDS.columns} FROM refunds WHERE charge_id IN (${ids.map(() => "?").join(", ")})
                ORDER BY created_at, id`,
          values: ids,
        });
  const data = page.rows.map((c) =>
    serializeCharge(
      { ...c, idempotentRequestId: null, refundHeldCents: 0 },
      refunds.filter((r) => r.chargeId === c.id).map(serializeRefund),
    ),
  );
  return listBody(CHARGES.url, data, page.hasMore);
}

export async function listRefunds(apiClientId: number, search: URLSearchParams): Promise<string> {
  const query = parseListQuery(search);
  const rows = await listRows<Refund>(REFUNDS, apiClientId, search, query);
  const page = pageOf(rows, query);
  return listBody(REFUNDS.url, page.rows.map(serializeRefund), page.hasMore);
}
