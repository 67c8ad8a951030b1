import { env } from "~/env";
import { gateway } from "~/server/gateway";
import { dieAfterCharges } from "./dieAfterGateway";
import { chargeBehindPeer } from "./peers";
import { postWithoutLayer } from "./withoutIdempotency";

/**
 * BENCHMARKS ONLY: the charges route's POST as a benchmark switch picks it, the money path untouched otherwise.
 * BENCHMARK_PEER (bench/peers.ts): behind another idempotency layer; BENCHMARK_SKIP_IDEMPOTENCY (bench/overhead.ts):
 * behind none; BENCHMARK_DIE_AFTER_GATEWAY (bench/peers.ts): the process dies once a marked charge is made, under
 * whichever layer. All refused outside a benchmark's own database (src/env.ts); unset, the route is as given.
 */
export function withBenchmarkSwitches<Route extends { POST: (request: Request) => Promise<Response> }>(
  route: Route,
): Route {
  if (env.BENCHMARK_DIE_AFTER_GATEWAY) dieAfterCharges(gateway);
  const post = env.BENCHMARK_PEER ? postBehindPeer : env.BENCHMARK_SKIP_IDEMPOTENCY ? postWithoutLayer : null;
  return post ? { ...route, POST: post } : route;
}

const postBehindPeer = (request: Request) => chargeBehindPeer(request, env.BENCHMARK_PEER!);
