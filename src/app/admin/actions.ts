"use server";

import { redirect } from "next/navigation";
import { getSession } from "~/server/auth/session";
import { authenticateStaff } from "~/server/auth/staff";

export async function login(_previous: { error?: string } | undefined, form: FormData): Promise<{ error?: string }> {
  const user = await authenticateStaff(String(form.get("email") ?? ""), String(form.get("password") ?? ""));
  if (!user) return { error: "Wrong e-mail or password." };
  const session = await getSession();
  session.user = user;
  await session.save();
  redirect("/admin");
}

export async function logout() {
  const session = await getSession();
  session.destroy();
  redirect("/admin/login");
}
