"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { userMessage } from "../../_components/errorMessage";
import { useTRPC } from "~/trpc/react";

function TwoFactor() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.account.me.queryOptions());
  const start = useMutation(trpc.account.startTwoFactor.mutationOptions());
  const confirm = useMutation(
    trpc.account.confirmTwoFactor.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.account.me.queryKey() }),
    }),
  );
  const [code, setCode] = useState("");
  if (!me.data) return null;

  if (me.data.totpEnabled) {
    return (
      <section className="card space-y-3" aria-label="Two-factor sign-in">
        <h2>Two-factor sign-in</h2>
        <p className="good">On: signing in asks for a code from your authenticator app.</p>
      </section>
    );
  }
  return (
    <section className="card space-y-3" aria-label="Two-factor sign-in">
      <h2>Two-factor sign-in</h2>
      {me.data.twoFactorRequired && <p className="warn">Required for engineers on this installation.</p>}
      {!start.data ? (
        <form
          className="grid max-w-sm gap-3"
          onSubmit={(e: FormEvent<HTMLFormElement>) => {
            e.preventDefault();
            start.mutate({ password: String(new FormData(e.currentTarget).get("password")) });
          }}
        >
          <label className="field">
            Your password
            <input className="input" name="password" type="password" autoComplete="current-password" required />
          </label>
          <button type="submit" className="btn" disabled={start.isPending}>
            Set up two-factor sign-in
          </button>
        </form>
      ) : (
        <form
          onSubmit={(e: FormEvent) => {
            e.preventDefault();
            confirm.mutate({ code });
          }}
          className="grid max-w-sm gap-3"
        >
          <p>Scan this with an authenticator app (or enter the key by hand), then type the code it shows.</p>
          {/* biome-ignore lint/performance/noImgElement: an inline data: SVG, nothing to optimise */}
          <img
            src={`data:image/svg+xml;utf8,${encodeURIComponent(start.data.qrSvg)}`}
            alt="QR code of the TOTP secret"
            width={180}
            height={180}
          />
          <p>
            Key: <code data-testid="totp-secret">{start.data.secret}</code>
          </p>
          <label className="field">
            Code from the app
            <input
              className="input"
              value={code}
              onChange={(e) => setCode(e.target.value)}
              inputMode="numeric"
              autoComplete="one-time-code"
              required
            />
          </label>
          <button className="btn" type="submit" disabled={confirm.isPending}>
            Turn on two-factor sign-in
          </button>
        </form>
      )}
      {(start.error ?? confirm.error) && (
        <p role="alert" className="bad">
          {userMessage(start.error ?? confirm.error)}
        </p>
      )}
    </section>
  );
}

function ChangePassword() {
  const trpc = useTRPC();
  const me = useQuery(trpc.account.me.queryOptions());
  const change = useMutation(
    trpc.account.changePassword.mutationOptions({
      // The first password replaced: the rest of the dashboard opens (a full load, past the layout's redirect).
      onSuccess: () => {
        if (me.data?.mustChangePassword) window.location.assign("/admin");
      },
    }),
  );
  return (
    <section className="card space-y-3" aria-label="Password">
      <h2>Password</h2>
      {me.data?.mustChangePassword && (
        <p role="status" className="warn" data-testid="first-password">
          You are signed in with the first password you were given. Choose your own before anything else.
        </p>
      )}
      <form
        className="grid max-w-sm gap-3"
        onSubmit={async (e: FormEvent<HTMLFormElement>) => {
          e.preventDefault();
          const form = e.currentTarget;
          const data = new FormData(form);
          await change.mutateAsync({ current: String(data.get("current")), next: String(data.get("next")) });
          form.reset();
        }}
      >
        <label className="field">
          Current password
          <input className="input" name="current" type="password" autoComplete="current-password" required />
        </label>
        <label className="field">
          New password
          <input className="input" name="next" type="password" autoComplete="new-password" minLength={12} required />
        </label>
        <button className="btn" type="submit" disabled={change.isPending}>
          Change password
        </button>
        {change.isSuccess && (
          <p role="status" className="good">
            Password changed; your other sessions were ended.
          </p>
        )}
        {change.error && (
          <p role="alert" className="bad">
            {userMessage(change.error)}
          </p>
        )}
      </form>
    </section>
  );
}

export function Account() {
  return (
    <>
      <h1 className="mb-2">Account</h1>
      <TwoFactor />
      <ChangePassword />
    </>
  );
}
