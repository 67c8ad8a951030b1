import { db, type Statement } from "~/server/db";
import { phaseCondition } from "~/server/idempotency/reading";

/**
 * The ledger check "every stored 201 names its own row": the ids of records of `route` answered 201 since `since`
 * whose body names no row of theirs in `table` (the route's money rows, tied to their record). Complete records
 * along (state, updated_at); `state` is the record's alone, so the lifecycle's condition needs no alias.
 */
export function answersWithoutTheirRowStatement(route: string, table: "charges" | "refunds", since: Date): Statement {
  const complete = phaseCondition("complete", since);
  return {
    sql: `SELECT r.id FROM idempotent_requests r LEFT JOIN ${table} m ON m.idempotent_request_id = r.id
           WHERE r.route = ? AND ${complete.sql} AND r.response_status = 201 AND r.updated_at >= ?
             AND (m.id IS NULL OR m.id <> JSON_UNQUOTE(JSON_EXTRACT(r.response_body, '$.id')))`,
    values: [route, ...complete.values, since],
  };
}

/** The ids of the records answersWithoutTheirRowStatement finds. */
export async function answersWithoutTheirRow(route: string, table: "charges" | "refunds", since: Date) {
  const { sql, values } = answersWithoutTheirRowStatement(route, table, since);
  return (await db.$queryRawUnsafe<{ id: bigint }[]>(sql, ...values)).map((r) => r.id);
}
