/**
 * The benchmark-only switches are off by default and refused outside a
 * benchmark database, so that a production environment cannot turn them on
 * by accident: BENCHMARK_DIAGNOSTICS (GET /api/diagnostics forces a full GC),
 * BENCHMARK_SKIP_IDEMPOTENCY (no idempotency layer at all), and bench/peers.ts's
 * BENCHMARK_PEER (another layer) and BENCHMARK_DIE_AFTER_GATEWAY (a crash).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, test } from "node:test";
import { promisify } from "node:util";

/** Parses src/env.ts in a fresh process with these variables; its exit status and output. */
async function parseEnv(vars: Record<string, string>) {
  const script =
    "import('./src/env.ts').then(({ env }) => console.log(JSON.stringify(" +
    "{ diagnostics: env.BENCHMARK_DIAGNOSTICS, skip: env.BENCHMARK_SKIP_IDEMPOTENCY, " +
    "peer: env.BENCHMARK_PEER ?? null, die: env.BENCHMARK_DIE_AFTER_GATEWAY })))";
  // Only these variables: whatever the calling shell has set (GATEWAY=stripe in CI's second pass, say) must not
  // decide the answer.
  const env = { PATH: process.env.PATH ?? "", NODE_ENV: "test", DATABASE_URL: "mysql://root@127.0.0.1:3306/charges" };
  const args = ["--import", "tsx", "--conditions=react-server", "--input-type=module", "--eval", script];
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
      env: { ...env, ...vars } as NodeJS.ProcessEnv,
    });
    return { status: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { status: failed.code, output: `${failed.stdout}${failed.stderr}` };
  }
}

// Each case starts Node processes and waits on them: side by side, the file takes a few seconds, not a dozen.
describe("the benchmark switches", { concurrency: true }, () => {
  test("every switch is off by default", async () => {
    const result = await parseEnv({});
    assert.equal(result.status, 0, result.output);
    assert.match(result.output, /\{"diagnostics":false,"skip":false,"peer":null,"die":false\}/);
  });

  for (const name of ["BENCHMARK_DIAGNOSTICS", "BENCHMARK_SKIP_IDEMPOTENCY", "BENCHMARK_DIE_AFTER_GATEWAY"]) {
    test(`${name}=1 is refused unless DATABASE_URL names a benchmark database`, async () => {
      const refused = await parseEnv({ [name]: "1" });
      assert.notEqual(refused.status, 0, refused.output);
      assert.match(refused.output, new RegExp(`${name}: is for benchmarks only`));
      const accepted = await parseEnv({ [name]: "1", DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench7" });
      assert.equal(accepted.status, 0, accepted.output);
    });
  }

  test("BENCHMARK_SKIP_IDEMPOTENCY=floor (no layer, a bare claim and its completion) is refused alike", async () => {
    const refused = await parseEnv({ BENCHMARK_SKIP_IDEMPOTENCY: "floor" });
    assert.notEqual(refused.status, 0, refused.output);
    assert.match(refused.output, /BENCHMARK_SKIP_IDEMPOTENCY: is for benchmarks only/);
    const accepted = await parseEnv({
      BENCHMARK_SKIP_IDEMPOTENCY: "floor",
      DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench",
    });
    assert.equal(accepted.status, 0, accepted.output);
    assert.match(accepted.output, /"skip":"floor"/);
  });

  test("BENCHMARK_PEER (bench/peers.ts: the route behind another idempotency layer) is refused alike", async () => {
    for (const peer of ["node-idempotency-redis", "node-idempotency-memory"]) {
      const refused = await parseEnv({ BENCHMARK_PEER: peer });
      assert.notEqual(refused.status, 0, refused.output);
      assert.match(refused.output, /BENCHMARK_PEER: is for benchmarks only/);
      const accepted = await parseEnv({
        BENCHMARK_PEER: peer,
        DATABASE_URL: "mysql://root@127.0.0.1:3306/charges_bench4",
      });
      assert.equal(accepted.status, 0, accepted.output);
      assert.match(accepted.output, new RegExp(`"peer":"${peer}"`));
    }
  });
});
