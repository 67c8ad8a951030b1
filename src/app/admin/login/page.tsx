"use client";

import { useActionState } from "react";
import { login } from "../actions";

export default function LoginPage() {
  const [state, action, pending] = useActionState(login, undefined);
  return (
    <main className="page narrow">
      <h1>Charges dashboard</h1>
      <form action={action} className="card login">
        <label>
          E-mail
          <input name="email" type="email" autoComplete="username" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        {state?.error && <p role="alert" className="bad">{state.error}</p>}
        <button type="submit" disabled={pending}>
          Sign in
        </button>
      </form>
    </main>
  );
}
