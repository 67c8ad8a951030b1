"use client";

import { useState, type FormEvent } from "react";
import { RETURN_TO_KEY } from "~/trpc/react";

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

/**
 * Back to the page the user was on: `?next=` (a signed-out visit to a deep link)
 * or what the dashboard kept when a session ended under it. Only dashboard
 * paths of this site: never another origin.
 */
function returnTo(): string {
  const asked = new URLSearchParams(window.location.search).get("next") ?? sessionStorage.getItem(RETURN_TO_KEY);
  sessionStorage.removeItem(RETURN_TO_KEY);
  return asked && /^\/admin(\/|\?|$)/.test(asked) && !asked.startsWith("/admin/login") ? asked : "/admin";
}

export function LoginForm() {
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
    // A full load, not a client-side move: the dashboard's pages have a CSP of their own (the sign-in page's is
    // stricter), and a first password's owner is sent on to Account by the server.
    window.location.assign(returnTo());
  }

  return (
    <form onSubmit={submit} className="card grid gap-3" key={step} aria-label="Sign in">
      {step === "password" ? (
        <>
          <label className="field">
            E-mail
            <input className="input" name="email" type="email" autoComplete="username" required />
          </label>
          <label className="field">
            Password
            <input className="input" name="password" type="password" autoComplete="current-password" required />
          </label>
        </>
      ) : (
        <label className="field">
          Authentication code
          <input
            className="input"
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            pattern="[0-9]{6}"
            maxLength={6}
            required
            // The field replaces the password step just submitted: focus must follow it.
            // biome-ignore lint/a11y/noAutofocus: deliberate, see above
            autoFocus
          />
        </label>
      )}
      {error && (
        <p role="alert" className="bad">
          {error}
        </p>
      )}
      <button type="submit" className="btn" disabled={pending}>
        {step === "password" ? "Sign in" : "Verify"}
      </button>
    </form>
  );
}
