import { randomBytes } from "node:crypto";
import { db } from "~/server/db";
import { hashApiKey } from "~/server/auth/apiClients";
import { hashPassword } from "~/server/auth/password";
import type { StaffRole } from "~/generated/prisma/client";

export const DEMO_CLIENT_NAME = "Demo client";

/**
 * The demo API client and two staff users. Keys are stored hashed, so the demo
 * key is rotated on every start and printed once; staff passwords come from
 * DEMO_SUPPORT_PASSWORD / DEMO_ENGINEER_PASSWORD or are generated and printed.
 */
export async function seedDemo() {
  const apiKey = `sk_test_${randomBytes(24).toString("base64url")}`;
  const existing = await db.apiClient.findFirst({ where: { name: DEMO_CLIENT_NAME } });
  const keyFields = { keyHash: hashApiKey(apiKey), keyPrefix: apiKey.slice(0, 12) };
  if (existing) await db.apiClient.update({ where: { id: existing.id }, data: keyFields });
  else await db.apiClient.create({ data: { name: DEMO_CLIENT_NAME, ...keyFields } });

  const staff: { email: string; password: string; role: StaffRole }[] = [
    { email: "support@example.com", password: process.env.DEMO_SUPPORT_PASSWORD ?? randomBytes(9).toString("base64url"), role: "support" },
    { email: "engineer@example.com", password: process.env.DEMO_ENGINEER_PASSWORD ?? randomBytes(9).toString("base64url"), role: "engineer" },
  ];
  for (const user of staff) {
    const passwordHash = await hashPassword(user.password);
    await db.staffUser.upsert({
      where: { email: user.email },
      create: { email: user.email, name: user.role === "engineer" ? "Demo engineer" : "Demo support", role: user.role, passwordHash },
      update: { passwordHash, role: user.role },
    });
  }
  return { apiKey, staff };
}
