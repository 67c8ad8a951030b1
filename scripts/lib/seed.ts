import { randomBytes } from "node:crypto";
import { db } from "~/server/db";
import { generateApiKey } from "~/server/auth/apiClients";
import { hashPassword } from "~/server/auth/password";
import type { StaffRole } from "~/generated/prisma/client";

export const DEMO_CLIENT_NAME = "Demo client";

/**
 * The demo API client and two staff users, for `npm start` in development and
 * for `npm test`; never in production, where the first engineer is made with
 * `npm run staff -- create`. Keys are stored hashed, so the demo key is
 * replaced on every start and printed once; staff passwords come from
 * DEMO_SUPPORT_PASSWORD / DEMO_ENGINEER_PASSWORD or are generated and printed.
 */
export async function seedDemo() {
  if (process.env.NODE_ENV === "production") throw new Error("refusing to seed demo data with NODE_ENV=production");
  const { apiKey, keyHash, keyPrefix } = generateApiKey();
  const client =
    (await db.apiClient.findFirst({ where: { name: DEMO_CLIENT_NAME } })) ??
    (await db.apiClient.create({ data: { name: DEMO_CLIENT_NAME, contactEmail: "demo@example.com" } }));
  await db.apiKey.deleteMany({ where: { apiClientId: client.id } });
  await db.apiKey.create({ data: { apiClientId: client.id, keyHash, keyPrefix } });

  const staff: { email: string; password: string; role: StaffRole }[] = [
    {
      email: "support@example.com",
      password: process.env.DEMO_SUPPORT_PASSWORD ?? randomBytes(9).toString("base64url"),
      role: "support",
    },
    {
      email: "engineer@example.com",
      password: process.env.DEMO_ENGINEER_PASSWORD ?? randomBytes(9).toString("base64url"),
      role: "engineer",
    },
  ];
  for (const user of staff) {
    const passwordHash = await hashPassword(user.password);
    await db.staffUser.upsert({
      where: { email: user.email },
      create: {
        email: user.email,
        name: user.role === "engineer" ? "Demo engineer" : "Demo support",
        role: user.role,
        passwordHash,
      },
      update: { passwordHash, role: user.role, disabledAt: null },
    });
  }
  return { apiKey, staff };
}
