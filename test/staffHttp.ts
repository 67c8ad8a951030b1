/**
 * The dashboard over HTTP, as a browser would use it: sign in through
 * /api/auth, keep the session cookie, call tRPC procedures (superjson on the
 * wire) with the headers a same-origin page sends.
 */
import { randomUUID } from "node:crypto";
import { generate } from "otplib";
import superjson from "superjson";
import type { StaffRole } from "~/generated/prisma/client";
import { hashPassword } from "~/server/auth/password";
import { sealTotpSecret } from "~/server/auth/totpSecretBox";
import { APP_URL, db } from "./helpers";

export type StaffAccount = { id: number; email: string; password: string };

/** A staff user straight in the database (the password hash costs ~0.3 s). */
export async function createStaffAccount(role: StaffRole, opts: { totpSecret?: string; passwordHash?: string } = {}) {
  const password = `pw-${randomUUID()}`;
  const email = `${role}-${randomUUID().slice(0, 8)}@example.com`;
  const user = await db.staffUser.create({
    data: {
      email,
      name: `Test ${role}`,
      role,
      passwordHash: opts.passwordHash ?? (await hashPassword(password)),
    },
  });
  // Sealed with the run's TOTP_ENCRYPTION_KEY, as enrolment stores it (the user's id is part of the seal).
  if (opts.totpSecret) {
    const totpSecret = sealTotpSecret(opts.totpSecret, user.id);
    await db.staffUser.update({ where: { id: user.id }, data: { totpSecret } });
  }
  return { id: user.id, email, password } satisfies StaffAccount;
}

/** A client address of its own (documentation range), so that one test's failures never throttle another's. */
export const testAddress = () => `2001:db8::${randomUUID().slice(0, 4)}:${randomUUID().slice(0, 4)}`;

export type TrpcResult = {
  status: number;
  headers: Headers;
  data?: any;
  error?: { message: string; code: string; data: any };
};

export class Browser {
  cookie: string | null = null;
  constructor(
    readonly baseUrl = APP_URL,
    readonly address = testAddress(),
    readonly userAgent = "charges-test-browser",
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      "User-Agent": this.userAgent,
      "X-Forwarded-For": this.address,
      "Sec-Fetch-Site": "same-origin",
      ...(this.cookie ? { Cookie: this.cookie } : {}),
      ...extra,
    };
  }

  private keepCookie(res: Response) {
    const set = res.headers.getSetCookie().find((c) => c.startsWith("charges_session="));
    if (!set) return;
    const value = set.split(";")[0]!;
    this.cookie = value === "charges_session=" ? null : value;
  }

  async post(path: string, body: unknown, extra: Record<string, string> = {}) {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method: "POST",
      headers: this.headers({ "Content-Type": "application/json", ...extra }),
      body: JSON.stringify(body),
      redirect: "manual",
    });
    this.keepCookie(res);
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as any) : null };
  }

  /** Password step (and the TOTP step when a secret is given). */
  async signIn(account: { email: string; password: string }, totpSecret?: string) {
    const first = await this.post("/api/auth/login", { email: account.email, password: account.password });
    if (first.status !== 200 || first.json.status !== "second_factor_required" || !totpSecret) return first;
    return this.post("/api/auth/verify", { code: await generate({ secret: totpSecret }) });
  }

  async signOut() {
    const res = await fetch(`${this.baseUrl}/api/auth/logout`, {
      method: "POST",
      headers: this.headers(),
      redirect: "manual",
    });
    this.keepCookie(res);
    return res;
  }

  async page(path: string) {
    return fetch(`${this.baseUrl}${path}`, { headers: this.headers(), redirect: "manual" });
  }

  private async trpcAnswer(res: Response): Promise<TrpcResult> {
    const body = (await res.json()) as any;
    if (body.error)
      return {
        status: res.status,
        headers: res.headers,
        error: { ...body.error.json, code: body.error.json.data.code },
      };
    return { status: res.status, headers: res.headers, data: superjson.deserialize(body.result.data) };
  }

  async query(path: string, input?: unknown, extra: Record<string, string> = {}): Promise<TrpcResult> {
    const qs = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`;
    const res = await fetch(`${this.baseUrl}/api/trpc/${path}${qs}`, { headers: this.headers(extra) });
    return this.trpcAnswer(res);
  }

  async mutate(path: string, input?: unknown, extra: Record<string, string> = {}): Promise<TrpcResult> {
    const res = await fetch(`${this.baseUrl}/api/trpc/${path}`, {
      method: "POST",
      headers: this.headers({ "Content-Type": "application/json", ...extra }),
      body: JSON.stringify(input === undefined ? {} : superjson.serialize(input)),
    });
    return this.trpcAnswer(res);
  }
}

/** Signs in a new browser; throws when that fails. */
export async function signedIn(account: StaffAccount, opts: { totpSecret?: string; baseUrl?: string } = {}) {
  const browser = new Browser(opts.baseUrl);
  const res = await browser.signIn(account, opts.totpSecret);
  if (res.status !== 200 || res.json.status !== "signed_in")
    throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.json)}`);
  return browser;
}
