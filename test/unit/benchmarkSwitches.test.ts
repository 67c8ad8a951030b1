/**
 * The benchmark-only switches are off by default and refused outside a
 * benchmark database, so that a production environment cannot turn them on
 * by accident: BENCHMARK_DIAGNOSTICS (GET /api/diagnostics forces a full GC),
 * BENCHMARK_SKIP_IDEMPOTENCY (no idempotency layer at all), and bench/peers.ts's
 * BENCHMARK_PEER (another layer) and BENCHMARK_DIE_AFTER_GATEWAY (a crash).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

/** Parses src/env.ts in a fresh process with these variables; its exit status and output. */
function parseEnv(vars: Record<string, string>) {
  const script =
    "import('./src/env.ts').then(({ env }) => console.log(JSON.stringify(" +
    "{ diagnostics: env.BENCHMARK_DIAGNOSTICS, skip: env.BENCHMARK_SKIP_IDEMPOTENCY, " +
    "peer: env.BENCHMARK_PEER ?? null, die: env.BENCHMARK_DIE_AFTER_GATEWAY })))";
  // Only these variables: whatever the calling shell has set (GATEWAY=stripe in CI's second pass, say) must not
  // decide the answer.
  const result = spawnSync("node_modules/.bin/tsx", ["--conditions=react-server", "--eval", script], {
    env: {
      PATH: process.env.PATH ?? "",
      NODE_ENV: "test",
      DATABASE_URL: "mysql://root@127.0.0.1:3306/charges",
      ...vars,
    },
    encoding: "utf8",
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

test("every switch is off by default", () => {
  const result = parseEnv({});
  assert.equal(result.status, 0, result.output);
  assert.match(result.output, /\{"diagnostics":false,"skip":false,"peer":null,"die":false\}/);
});

for (const name of ["BENCHMARK_DIAGNOSTICS", "BENCHMARK_SKIP_IDEMPOTENCY", "BENCHMARK_DIE_AFTER_GATEWAY"]) {
  test(`${name}=1 is refused unless DATABASE_URL names a benchmark database`, () => {
    const refused = parseEnv({ [name]: "1" });
    assert.notEqual(refused.status, 0, refused.output);
    assert.match(refused.output, new RegExp(`${name}: is for benchmarks only`));
    const accepted = parseEnv({ [name]: "1", DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench7" });
    assert.equal(accepted.status, 0, accepted.output);
  });
}

test("BENCHMARK_SKIP_IDEMPOTENCY=floor (the layer off plus a bare claim and its completion) is refused alike", () => {
  const refused = parseEnv({ BENCHMARK_SKIP_IDEMPOTENCY: "floor" });
  assert.notEqual(refused.status, 0, refused.output);
  assert.match(refused.output, /BENCHMARK_SKIP_IDEMPOTENCY: is for benchmarks only/);
  const accepted = parseEnv({
    BENCHMARK_SKIP_IDEMPOTENCY: "floor",
    DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench",
  });
  assert.equal(accepted.status, 0, accepted.output);
  assert.match(accepted.output, /"skip":"floor"/);
});

test("BENCHMARK_PEER (bench/peers.ts: the route behind another idempotency layer) is refused alike", () => {
  for (const peer of ["node-idempotency-redis", "node-idempotency-memory"]) {
    const refused = parseEnv({ BENCHMARK_PEER: peer });
    assert.notEqual(refused.status, 0, refused.output);
    assert.match(refused.output, /BENCHMARK_PEER: is for benchmarks only/);
    const accepted = parseEnv({ BENCHMARK_PEER: peer, DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench4" });
    assert.equal(accepted.status, 0, accepted.output);
    assert.match(accepted.output, new RegExp(`"peer":"${peer}"`));
  }
});
