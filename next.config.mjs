/** @type {import('next').NextConfig} */
const nextConfig = {
  // The public API is server-only; keep the driver out of the bundler's way.
  serverExternalPackages: ["mariadb", "@prisma/adapter-mariadb"],
  poweredByHeader: false,
};

export default nextConfig;
