import { listRefunds } from "~/server/lists/moneyLists";
import { moneyRoute } from "~/server/operations/moneyRoute";
import { refundOperation } from "~/server/refunds/refundOperation";

export const dynamic = "force-dynamic";

export const { GET, POST, PUT, PATCH, DELETE } = moneyRoute(refundOperation, listRefunds);
