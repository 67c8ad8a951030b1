import answerHeaders from "./src/server/http/answerHeaders.json" with { type: "json" };

/**
 * Headers for every answer (src/server/http/answerHeaders.json, which src/proxy.ts also sets on the answers it
 * makes itself). The dashboard pages also get a per-request CSP with a nonce (src/proxy.ts); API answers are JSON
 * and may load nothing.
 */
const everywhere = Object.entries(answerHeaders.everywhere).map(([key, value]) => ({ key, value }));
const API_CSP = answerHeaders.apiCsp;

/** @type {import('next').NextConfig} */
const nextConfig = {
  // The public API is server-only; keep the driver out of the bundler's way.
  // bench/peers.ts's idempotency packages (devDependencies) are loaded at run time, only when it asks for them.
  serverExternalPackages: [
    "mariadb",
    "@prisma/adapter-mariadb",
    "@node-idempotency/core",
    "@node-idempotency/storage-adapter-memory",
    "@node-idempotency/storage-adapter-redis",
  ],
  poweredByHeader: false,
  // `npm test` runs `tsc --noEmit` as a step of its own just before the build; every other build checks types.
  typescript: { ignoreBuildErrors: process.env.CHARGES_TYPECHECKED === "1" },
  // API answers are a few hundred bytes: gzipping each one cost the app ~5% of
  // its CPU in the storm benchmark, for nothing. A proxy in front compresses
  // the dashboard's assets if that is wanted.
  compress: false,
  async headers() {
    return [
      { source: "/:path*", headers: everywhere },
      { source: "/api/:path*", headers: [{ key: "Content-Security-Policy", value: API_CSP }] },
    ];
  },
};

export default nextConfig;
