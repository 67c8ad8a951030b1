import { getIronSession, type SessionOptions } from "iron-session";
import { cookies } from "next/headers";
import { env } from "~/env";
import type { StaffRole } from "~/generated/prisma/client";

/** What the dashboard's session cookie carries (sealed and signed by iron-session). */
export type StaffSession = { user?: { id: number; email: string; name: string; role: StaffRole } };
export type SessionUser = NonNullable<StaffSession["user"]>;

const sessionOptions: SessionOptions = {
  password: env.SESSION_SECRET,
  cookieName: "charges_session",
  ttl: 8 * 3600,
  cookieOptions: { httpOnly: true, sameSite: "lax", secure: env.NODE_ENV === "production", path: "/" },
};

export async function getSession() {
  return getIronSession<StaffSession>(await cookies(), sessionOptions);
}
