import { z } from "zod";
import { sessionSecretProblem } from "~/lib/sessionSecret";

import { parseMysqlUrl } from "~/lib/mysqlUrl";

const parses = (url: string) => {
  try {
    return parseMysqlUrl(url).hosts.length > 0;
  } catch {
    return false;
  }
};
const databaseOf = (url: string) => (parses(url) ? (parseMysqlUrl(url).database ?? "") : "");
/**
 * A test stack: NODE_ENV=test, or a test database (the suite's production build, and its instances run with
 * NODE_ENV=production on purpose).
 */
const forTests = (env: { NODE_ENV: string; DATABASE_URL: string }) =>
  env.NODE_ENV === "test" || /^charges_test\d*$/.test(databaseOf(env.DATABASE_URL));

/**
 * The least STRIPE_SEARCH_CONSISTENCY_MS outside tests: a request held up on its way to Stripe, or Stripe's
 * search lagging in an incident, for longer than the window turns a true "nothing was made" into a false one.
 */
export const STRIPE_MIN_CONSISTENCY_MS = 10 * 60_000;

/** Stripe itself (no STRIPE_API_BASE, or api.stripe.com), not the simulator's Stripe mode. */
const talksToStripe = (apiBase: string | undefined) => !apiBase || new URL(apiBase).hostname === "api.stripe.com";

/**
 * Every environment variable the server reads, parsed once at start-up.
 * A bad value stops the process with a message naming the variable, instead of
 * surfacing later as a confusing runtime error. .env.example lists each, with its default and meaning
 * (test/unit/configuration.test.ts checks it).
 */
const schema = z
  .object({
    NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
    /** mysql://user:password@host:port/database; a cluster's nodes as host1:port1,host2:port2 (first preferred). */
    DATABASE_URL: z
      .string()
      .default("mysql://root@127.0.0.1:3306/charges")
      .refine((url) => parses(url), "must be mysql://user:password@host:port[,host:port...]/database"),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
    /**
     * Seconds a statement of the app waits for a row lock before MariaDB gives up (innodb_lock_wait_timeout of its
     * connections); unset: the server's (50 s by default). The test stack sets it short, so that tests of a
     * transaction stuck behind another's lock wait seconds, not the server's 50.
     */
    DATABASE_LOCK_WAIT_TIMEOUT_S: z.coerce.number().int().min(1).max(3_600).optional(),
    /** Which payment gateway charges go to: the simulator's own protocol, or Stripe through its SDK. */
    GATEWAY: z.enum(["sim", "stripe"]).default("sim"),
    /** GATEWAY=sim: the simulator's base URL. */
    GATEWAY_URL: z.string().url().default("http://127.0.0.1:4010"),
    /** GATEWAY=stripe: a secret (or restricted) key; sk_test_... for test mode. */
    STRIPE_SECRET_KEY: z
      .string()
      .regex(/^(sk|rk)_(test|live)_\w+$/, "must be a Stripe secret key (sk_test_..., sk_live_...)")
      .optional(),
    /** GATEWAY=stripe: where Stripe's API is (protocol, host, port); unset: api.stripe.com. Tests: the simulator. */
    STRIPE_API_BASE: z.string().url().optional(),
    /**
     * The secret the gateway signs its webhook events with (Stripe's `whsec_...`, either gateway): its events about
     * an operation settle it at once (src/server/gatewayEvents). Unset: POST /api/gateway/events answers 404.
     */
    GATEWAY_WEBHOOK_SECRET: z
      .string()
      .regex(/^whsec_\w{16,}$/, "must be a webhook signing secret (whsec_ and at least 16 more characters)")
      .optional(),
    /**
     * GATEWAY=stripe: how long after an attempt's deadline a request sent to Stripe may still land, or its search
     * still lag (under a minute normally, longer in an outage). Stripe cannot be told a deadline, so "nothing was
     * made" waits this out, for charges and refunds: an operation Stripe never answers is final this long after
     * its last attempt. At least STRIPE_MIN_CONSISTENCY_MS against Stripe itself.
     */
    STRIPE_SEARCH_CONSISTENCY_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(60 * 60_000),
    /** How long one gateway call may take before its outcome is treated as unknown. */
    GATEWAY_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    /**
     * A claim's lease lasts the gateway timeout plus this margin, which covers a
     * gateway call still in transit when it timed out and clock skew between
     * instances. After it, a retry takes the claim over.
     */
    LEASE_MARGIN_MS: z.coerce.number().int().min(100).default(2_000),
    /**
     * How long an unfinished record (released, or its holder's lease over)
     * waits for a retry before the sweeper finishes it.
     */
    REAP_AFTER_MS: z.coerce.number().int().min(1_000).default(60_000),
    SWEEP_INTERVAL_MS: z.coerce.number().int().min(1_000).default(60_000),
    /** How often a sweeper reconciles the ledger with the gateway's charge list (0: never). */
    RECONCILE_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(10 * 60_000),
    /**
     * The reconciliation refunds a gateway charge made for an operation the app answered "no charge was made"
     * (tied to it by its derived key), so the stored answer is true again; false leaves it to a person.
     */
    HEAL_LATE_CHARGES: z
      .enum(["true", "false"])
      .default("true")
      .transform((v) => v === "true"),
    PRUNE_BATCH_SIZE: z.coerce.number().int().min(1).max(100_000).default(500),
    /** Hours; fractions allowed down to 5 s (bench/soak.ts turns the table over in minutes, tests in seconds). */
    IDEMPOTENCY_KEY_TTL_HOURS: z.coerce
      .number()
      .min(1 / 720, "must be at least 5 seconds (1/720)")
      .default(24),
    /** Largest accepted request body, in bytes. */
    MAX_BODY_BYTES: z.coerce.number().int().min(256).default(16_384),
    /**
     * A request body (the API's, sign-in's, the dashboard's) not received in full this long after it began to be
     * read is answered 408: a client trickling its body cannot hold a connection for minutes.
     */
    BODY_READ_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
    /** The longest a process trusts an API key it looked up (revocations reach every process within 1 s). */
    API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(1_000).max(300_000).default(30_000),
    /** Keyless traffic must be zero for this long before enforcing is called safe. */
    SAFE_TO_ENFORCE_HOURS: z.coerce.number().int().min(1).default(24),
    /** ...with at least this many keyed requests in that window (a quiet system proves nothing)... */
    SAFE_TO_ENFORCE_MIN_KEYED: z.coerce.number().int().min(0).default(1_000),
    /** ...and counts going back at least this many hours (a fresh installation has seen too little). */
    SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED: z.coerce.number().int().min(0).default(72),
    /**
     * Seals the dashboard's session cookie. Optional here because the sweeper and the command-line tools
     * do not use it; the web server refuses to start without a good one (src/instrumentation.ts).
     */
    SESSION_SECRET: z
      .string()
      .optional()
      .transform((v) => v || undefined)
      .superRefine((secret, ctx) => {
        const problem = secret === undefined ? null : sessionSecretProblem(secret);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      }),
    /**
     * Staff passwords are hashed with scrypt at N = 2^this (r=8, p=1). 17 is OWASP's minimum (128 MiB, ~0.4 s); below
     * it only for tests (forTests), where the suite's hundreds of sign-ins cost minutes of CPU.
     */
    PASSWORD_SCRYPT_LOG2_N: z.coerce.number().int().min(10).max(20).default(17),
    /** A session ends after this long without a request... */
    STAFF_SESSION_IDLE_MINUTES: z.coerce
      .number()
      .int()
      .min(1)
      .max(24 * 60)
      .default(30),
    /** ...and this long after sign-in, however active. */
    STAFF_SESSION_MAX_HOURS: z.coerce
      .number()
      .int()
      .min(1)
      .max(7 * 24)
      .default(8),
    /**
     * Engineers must sign in with a TOTP code to use engineer-only actions. Unset: required with
     * NODE_ENV=production, not otherwise; `false` switches it off (the server says so at start-up).
     */
    STAFF_REQUIRE_2FA: z.enum(["true", "false"]).optional(),
    /**
     * Anyone who refunds from the dashboard (support and engineers) must have signed in with a TOTP code. Unset:
     * required with NODE_ENV=production, not otherwise; `true` or `false` decides.
     */
    STAFF_REFUND_REQUIRE_2FA: z.enum(["true", "false"]).optional(),
    /** At most this many dashboard refunds per person in any hour (requests awaiting approval count)... */
    STAFF_REFUND_MAX_PER_HOUR: z.coerce.number().int().min(0).default(20),
    /** ...and this many in any 24 hours... */
    STAFF_REFUND_MAX_PER_DAY: z.coerce.number().int().min(0).default(100),
    /** ...for at most this much in any hour (in minor units, e.g. cents, whatever the currency)... */
    STAFF_REFUND_MAX_CENTS_PER_HOUR: z.coerce.number().int().min(0).default(1_000_000),
    /** ...and this much in any 24 hours. */
    STAFF_REFUND_MAX_CENTS_PER_DAY: z.coerce.number().int().min(0).default(5_000_000),
    /**
     * A dashboard refund above this amount (minor units) is a request another staff member must approve (four
     * eyes; nobody approves their own). 0: every refund needs an approval.
     */
    STAFF_REFUND_APPROVAL_ABOVE_CENTS: z.coerce.number().int().min(0).default(50_000),
    /**
     * Encrypts TOTP secrets at rest (AES-256-GCM; 64 hex characters). Optional here because the sweeper and
     * the command-line tools do not use it; the web server refuses to start without one (src/server/boot.ts).
     */
    TOTP_ENCRYPTION_KEY: z
      .string()
      .optional()
      .transform((v) => v || undefined),
    /**
     * Reverse proxies in front of the app that append the client's address to X-Forwarded-For: the address
     * is the entry that many places from the right. With 0 it is the TCP peer's (src/server/http/requestInfo.ts).
     */
    TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(5).default(0),
    /**
     * Which API keys this deployment issues: `test` (sk_test_…) or `live` (sk_live_…). One setting for every
     * issuer (the dashboard, `npm run clients`, the demo seed), so one deployment never mixes the two; it names
     * the deployment, not NODE_ENV (a CLI run without NODE_ENV issues what the server does).
     */
    API_KEY_MODE: z.enum(["test", "live"]).default("test"),
    /** Bearer token that GET /api/metrics (Prometheus) requires; unset: the endpoint answers 404. */
    METRICS_TOKEN: z.string().min(24, "must be at least 24 characters (e.g. `openssl rand -hex 24`)").optional(),
    /** The least severe level the JSON log (pino) writes. */
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /**
     * Benchmarks only: POST /api/charges without the idempotency layer (no record, a new gateway key per
     * request, so every retry charges again), the baseline bench/overhead.ts measures the layer against.
     * `floor`: the same plus the least any insert-first layer must do, and nothing of this one's: a claim INSERT
     * under a unique index (its own bare table) before the gateway call, and an UPDATE of that row in the
     * charge's transaction: what keyed requests could reach if the layer's own work cost nothing.
     */
    BENCHMARK_SKIP_IDEMPOTENCY: z
      .enum(["0", "1", "floor"])
      .default("0")
      .transform((v) => (v === "0" ? false : v === "1" ? ("off" as const) : ("floor" as const))),
    /**
     * Benchmarks only (bench/peers.ts): POST /api/charges behind another idempotency layer instead of this
     * project's: @node-idempotency/core with its Redis or in-memory storage (src/server/benchmark/peers.ts).
     */
    BENCHMARK_PEER: z.enum(["node-idempotency-redis", "node-idempotency-memory"]).optional(),
    /** BENCHMARK_PEER=node-idempotency-redis: where its Redis is. */
    BENCHMARK_PEER_REDIS_URL: z.string().url().default("redis://127.0.0.1:6379"),
    /**
     * Benchmarks only (bench/peers.ts): the process SIGKILLs itself as soon as the gateway answers a charge for a
     * customer whose id starts with cus_die_, between the gateway call and saving its outcome.
     */
    BENCHMARK_DIE_AFTER_GATEWAY: z
      .enum(["0", "1"])
      .default("0")
      .transform((v) => v === "1"),
    /** How often a webhook dispatcher looks for due deliveries (src/server/webhooks/dispatcher.ts). */
    WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(250),
    /** Deliveries one dispatcher posts at once. */
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(500).default(100),
    /** How long one POST to an endpoint may take before the attempt counts as failed. */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    /** The first retry's wait; each next one doubles (jittered), up to WEBHOOK_RETRY_MAX_MS. */
    WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).default(10_000),
    WEBHOOK_RETRY_MAX_MS: z.coerce
      .number()
      .int()
      .min(10)
      .default(6 * 3_600_000),
    /** A delivery is retried for this long after its event, then marked failed. */
    WEBHOOK_RETRY_FOR_MS: z.coerce
      .number()
      .int()
      .min(100)
      .default(3 * 24 * 3_600_000),
    /** An endpoint failing (no 2xx) for this long is disabled. */
    WEBHOOK_DISABLE_AFTER_MS: z.coerce
      .number()
      .int()
      .min(100)
      .default(3 * 24 * 3_600_000),
    /** After a rotation, the previous secret signs too for this long. */
    WEBHOOK_ROTATION_OVERLAP_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(24 * 3_600_000),
    /** Endpoints on loopback or private addresses (tests, development); refused otherwise (SSRF). */
    WEBHOOK_ALLOW_PRIVATE_URLS: z
      .enum(["true", "false"])
      .default("false")
      .transform((v) => v === "true"),
    /**
     * Benchmarks only (bench/soak.ts): GET /api/diagnostics forces a full garbage collection and answers this
     * process's memory and event-loop delay. Off: 404.
     */
    BENCHMARK_DIAGNOSTICS: z
      .enum(["0", "1"])
      .default("0")
      .transform((v) => v === "1"),
  })
  .refine((env) => env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS < env.REAP_AFTER_MS, {
    path: ["REAP_AFTER_MS"],
    message: "must be longer than a lease (GATEWAY_TIMEOUT_MS + LEASE_MARGIN_MS)",
  })
  .refine((env) => !env.BENCHMARK_SKIP_IDEMPOTENCY || /^charges_bench\d*$/.test(databaseOf(env.DATABASE_URL)), {
    path: ["BENCHMARK_SKIP_IDEMPOTENCY"],
    message: "is for benchmarks only: refused unless DATABASE_URL names a benchmark database (charges_bench)",
  })
  .refine((env) => !env.BENCHMARK_DIAGNOSTICS || /^charges_bench\d*$/.test(databaseOf(env.DATABASE_URL)), {
    path: ["BENCHMARK_DIAGNOSTICS"],
    message: "is for benchmarks only: refused unless DATABASE_URL names a benchmark database (charges_bench)",
  })
  .refine((env) => !env.BENCHMARK_PEER || /^charges_bench\d*$/.test(databaseOf(env.DATABASE_URL)), {
    path: ["BENCHMARK_PEER"],
    message: "is for benchmarks only: refused unless DATABASE_URL names a benchmark database (charges_bench)",
  })
  .refine((env) => !env.BENCHMARK_DIE_AFTER_GATEWAY || /^charges_bench\d*$/.test(databaseOf(env.DATABASE_URL)), {
    path: ["BENCHMARK_DIE_AFTER_GATEWAY"],
    message: "is for benchmarks only: refused unless DATABASE_URL names a benchmark database (charges_bench)",
  })
  .refine((env) => env.PASSWORD_SCRYPT_LOG2_N >= 17 || forTests(env), {
    path: ["PASSWORD_SCRYPT_LOG2_N"],
    message:
      "must be at least 17 (OWASP's minimum for scrypt); lower only with NODE_ENV=test or a charges_test database",
  })
  .refine((env) => env.GATEWAY !== "stripe" || env.STRIPE_SECRET_KEY, {
    path: ["STRIPE_SECRET_KEY"],
    message: "is required when GATEWAY=stripe",
  })
  .refine(
    (env) =>
      env.GATEWAY !== "stripe" ||
      !talksToStripe(env.STRIPE_API_BASE) ||
      env.STRIPE_SEARCH_CONSISTENCY_MS >= STRIPE_MIN_CONSISTENCY_MS,
    {
      path: ["STRIPE_SEARCH_CONSISTENCY_MS"],
      message:
        `must be at least ${STRIPE_MIN_CONSISTENCY_MS} (10 minutes) with GATEWAY=stripe: a shorter window answers ` +
        `"nothing was made" while a request may still land at Stripe (only a simulator, STRIPE_API_BASE, may go lower)`,
    },
  )
  .transform((env) => ({
    ...env,
    STAFF_REQUIRE_2FA:
      env.STAFF_REQUIRE_2FA === undefined ? env.NODE_ENV === "production" : env.STAFF_REQUIRE_2FA === "true",
    STAFF_REFUND_REQUIRE_2FA:
      env.STAFF_REFUND_REQUIRE_2FA === undefined
        ? env.NODE_ENV === "production"
        : env.STAFF_REFUND_REQUIRE_2FA === "true",
  }));

export type Env = z.infer<typeof schema>;

/** Every variable's own schema, by name (its default: `.parse(undefined)`): .env.example lists them all. */
export const envVariables = schema.in.shape;

/** The environment `source` describes, or an error naming every bad variable (tests pass their own). */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const parsed = schema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
    throw new Error(`Invalid environment variables (see .env.example):\n${problems.join("\n")}`);
  }
  return parsed.data;
}

export const env = parseEnv();
