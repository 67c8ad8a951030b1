import { db } from "~/server/db";
import { verifyPassword } from "./password";
import type { SessionUser } from "./session";

/** The staff user for these credentials, or null (same answer for unknown e-mail and wrong password). */
export async function authenticateStaff(email: string, password: string): Promise<SessionUser | null> {
  const user = await db.staffUser.findUnique({ where: { email: email.trim().toLowerCase() } });
  if (!user || !(await verifyPassword(password, user.passwordHash))) return null;
  return { id: user.id, email: user.email, name: user.name, role: user.role };
}
