/**
 * Prefix search over keys, charge ids and customers, for the search box: each
 * kind is a range of its own index read in index order, so a one-letter prefix
 * costs what a full id does (it stops after a few rows).
 */
import { db } from "~/server/db";
import { recordsWithKeyPrefix } from "./recordList";
import { summarise } from "./log";
import { searchTerm } from "./resolve";
import { likePrefix } from "./sql";

const PER_KIND = 10;

export async function searchByPrefix(given: string) {
  const prefix = searchTerm(given) || given;
  const now = new Date();
  const [records, charges, customers] = await Promise.all([
    recordsWithKeyPrefix(prefix, PER_KIND + 1, now),
    db.$queryRawUnsafe<
      {
        id: string;
        customerId: string | null;
        amountCents: number;
        currency: string;
        status: string;
        createdAt: Date;
      }[]
    >(
      `SELECT id, customer_id AS customerId, amount_cents AS amountCents, currency, status, created_at AS createdAt
         FROM charges WHERE id LIKE ? ORDER BY id LIMIT ?`,
      likePrefix(prefix),
      PER_KIND + 1,
    ),
    db.$queryRawUnsafe<{ customerId: string }[]>(
      `SELECT DISTINCT customer_id AS customerId FROM charges WHERE customer_id LIKE ? ORDER BY customer_id LIMIT ?`,
      likePrefix(prefix),
      PER_KIND + 1,
    ),
  ]);
  return {
    requests: await summarise(records.slice(0, PER_KIND)),
    charges: charges.slice(0, PER_KIND),
    customers: customers.slice(0, PER_KIND).map((c) => c.customerId),
    more: {
      requests: records.length > PER_KIND,
      charges: charges.length > PER_KIND,
      customers: customers.length > PER_KIND,
    },
  };
}
