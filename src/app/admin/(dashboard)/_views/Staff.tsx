"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "~/trpc/react";
import { absolute } from "../../_components/format";
import { OneTimeSecret } from "../../_components/OneTimeSecret";

type Role = "support" | "engineer";

export function Staff() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const staff = useQuery(trpc.staff.list.queryOptions());
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.staff.list.queryKey() });
  const create = useMutation(trpc.staff.create.mutationOptions({ onSuccess: refresh }));
  const setRole = useMutation(trpc.staff.setRole.mutationOptions({ onSuccess: refresh }));
  const setDisabled = useMutation(trpc.staff.setDisabled.mutationOptions({ onSuccess: refresh }));
  const resetTwoFactor = useMutation(trpc.staff.resetTwoFactor.mutationOptions({ onSuccess: refresh }));
  const error = staff.error ?? create.error ?? setRole.error ?? setDisabled.error ?? resetTwoFactor.error;

  async function onCreate(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const input = { email: String(data.get("email")), name: String(data.get("name")), role: data.get("role") as Role };
    const result = await create.mutateAsync(input);
    setSecret({ label: `First password of ${result.email}`, value: result.temporaryPassword });
    form.reset();
  }

  return (
    <>
      <h1 className="mb-2">Staff</h1>
      {error && (
        <p role="alert" className="bad">
          {error.message}
        </p>
      )}
      {secret && <OneTimeSecret label={secret.label} value={secret.value} onDone={() => setSecret(null)} />}

      <section className="card space-y-3">
        <h2>Add a staff member</h2>
        <form onSubmit={onCreate} className="flex flex-wrap items-end gap-3">
          <label className="field">
            E-mail <input className="input" name="email" type="email" required maxLength={255} />
          </label>
          <label className="field">
            Name <input className="input" name="name" required maxLength={100} />
          </label>
          <label className="field">
            Role{" "}
            <select className="input" name="role" aria-label="Role" defaultValue="support">
              <option value="support">support</option>
              <option value="engineer">engineer</option>
            </select>
          </label>
          <button className="btn" type="submit" disabled={create.isPending}>
            Add staff member
          </button>
        </form>
        <p className="muted">They get a first password (shown once) and should change it under Account.</p>
      </section>

      <section className="card space-y-3">
        <div className="table-box" tabIndex={0}>
          <table className="data-table">
            <thead>
              <tr>
                <th>E-mail</th>
                <th>Name</th>
                <th>Role</th>
                <th>Two-factor</th>
                <th>Sessions</th>
                <th>Status</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {staff.data?.map((u) => (
                <tr key={u.id} aria-label={u.email}>
                  <td>{u.email}</td>
                  <td>{u.name}</td>
                  <td>
                    <select
                      className="input"
                      aria-label={`Role of ${u.email}`}
                      value={u.role}
                      onChange={(e) => setRole.mutate({ userId: u.id, role: e.target.value as Role })}
                    >
                      <option value="support">support</option>
                      <option value="engineer">engineer</option>
                    </select>
                  </td>
                  <td>
                    {u.twoFactor ? "on" : "off"}
                    {u.twoFactor && (
                      <button
                        type="button"
                        className="btn"
                        aria-label={`Reset two-factor of ${u.email}`}
                        onClick={() => resetTwoFactor.mutate({ userId: u.id })}
                      >
                        Reset
                      </button>
                    )}
                  </td>
                  <td>{u.activeSessions}</td>
                  <td>{u.disabledAt ? `disabled ${absolute(u.disabledAt)}` : "active"}</td>
                  <td>
                    <button
                      type="button"
                      className="btn"
                      aria-label={`${u.disabledAt ? "Enable" : "Disable"} ${u.email}`}
                      onClick={() => setDisabled.mutate({ userId: u.id, disabled: !u.disabledAt })}
                    >
                      {u.disabledAt ? "Enable" : "Disable"}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <p className="muted">
          Changing a role, disabling or resetting two-factor ends that person&apos;s sessions at once.
        </p>
      </section>
    </>
  );
}
