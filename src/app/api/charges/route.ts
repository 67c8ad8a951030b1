import { withBenchmarkSwitches } from "~/server/benchmark/routes";
import { chargeOperation } from "~/server/charges/chargeOperation";
import { listCharges } from "~/server/lists/moneyLists";
import { moneyRoute } from "~/server/operations/moneyRoute";

export const dynamic = "force-dynamic";

export const { GET, POST, PUT, PATCH, DELETE } = withBenchmarkSwitches(moneyRoute(chargeOperation, listCharges));
