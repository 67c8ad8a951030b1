import { defineConfig } from "prisma/config";

// Used by the Prisma CLI (generate; migrate where its engine can run).
// The app itself connects through the MariaDB driver adapter in src/server/db.ts.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "mysql://root@127.0.0.1:3306/charges" },
});
