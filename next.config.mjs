/** @type {import('next').NextConfig} */
const nextConfig = {
  // The public API is server-only; keep the driver out of the bundler's way.
  serverExternalPackages: ["mariadb", "@prisma/adapter-mariadb"],
  poweredByHeader: false,
  // API answers are a few hundred bytes: gzipping each one cost the app ~5% of
  // its CPU in the storm benchmark, for nothing. A proxy in front compresses
  // the dashboard's assets if that is wanted.
  compress: false,
};

export default nextConfig;
