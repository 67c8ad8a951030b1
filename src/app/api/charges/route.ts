import { env } from "~/env";
import { chargeBehindPeer } from "~/server/charges/benchmarkPeers";
import { chargeOperation } from "~/server/charges/chargeOperation";
import { moneyRoute } from "~/server/operations/moneyRoute";

export const dynamic = "force-dynamic";

const route = moneyRoute(chargeOperation);
export const { GET, PUT, PATCH, DELETE } = route;
// bench/peers.ts only: the same work behind another idempotency layer; unset, POST is the money route's own.
export const POST = env.BENCHMARK_PEER
  ? (request: Request) => chargeBehindPeer(request, env.BENCHMARK_PEER!)
  : route.POST;
