"use client";

import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";

type Step = "password" | "code";

/** Posts JSON to /api/auth/*; the answer's error message is shown as it is. */
async function post(path: string, body: unknown): Promise<{ ok: boolean; status?: string; message?: string }> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json().catch(() => ({}))) as { status?: string; error?: { message?: string } };
  if (res.ok) return { ok: true, status: json.status };
  const retry = res.headers.get("retry-after");
  const wait = retry ? ` (retry in ${Math.ceil(Number(retry) / 60)} min)` : "";
  return { ok: false, message: `${json.error?.message ?? "Sign-in failed."}${wait}` };
}

export default function LoginPage() {
  const router = useRouter();
  const [step, setStep] = useState<Step>("password");
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setPending(true);
    setError(null);
    const result =
      step === "password"
        ? await post("/api/auth/login", { email: form.get("email"), password: form.get("password") })
        : await post("/api/auth/verify", { code: form.get("code") });
    setPending(false);
    if (!result.ok) return setError(result.message ?? "Sign-in failed.");
    if (result.status === "second_factor_required") return setStep("code");
    router.push("/admin");
    router.refresh();
  }

  return (
    <main className="page narrow">
      <h1>Charges dashboard</h1>
      <form onSubmit={submit} className="card login" key={step} aria-label="Sign in">
        {step === "password" ? (
          <>
            <label>
              E-mail
              <input name="email" type="email" autoComplete="username" required />
            </label>
            <label>
              Password
              <input name="password" type="password" autoComplete="current-password" required />
            </label>
          </>
        ) : (
          <label>
            Authentication code
            <input
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9]{6}"
              maxLength={6}
              required
              autoFocus
            />
          </label>
        )}
        {error && (
          <p role="alert" className="bad">
            {error}
          </p>
        )}
        <button type="submit" disabled={pending}>
          {step === "password" ? "Sign in" : "Verify"}
        </button>
      </form>
    </main>
  );
}
