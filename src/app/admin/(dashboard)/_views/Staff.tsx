"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "~/trpc/react";
import { TimeText } from "../../_components/ui/Time";
import { userMessage } from "../../_components/errorMessage";
import { OneTimeSecret } from "../../_components/OneTimeSecret";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";

type Role = "support" | "engineer";

const CAN: Record<Role, string> = {
  support: "read the dashboard only (no switches, API clients, staff or audit log)",
  engineer: "also switch the rollout mode, manage API clients and their keys, manage staff and read the audit log",
};

/**
 * A role is chosen in the select, then changed only through a dialog that states the effect: a keyboard arrow on a
 * focused select (which changes its value at once) used to promote or demote someone on the spot.
 */
function RoleControl({
  u,
  pending,
  error,
  onConfirm,
}: {
  u: { id: number; email: string; role: Role };
  pending: boolean;
  error: string | null;
  onConfirm: (role: Role) => Promise<unknown>;
}) {
  const [draft, setDraft] = useState<Role>(u.role);
  const other: Role = u.role === "support" ? "engineer" : "support";
  return (
    <div className="flex flex-wrap items-center gap-2">
      <select
        className="input w-auto"
        aria-label={`Role of ${u.email}`}
        value={draft}
        onChange={(e) => setDraft(e.target.value as Role)}
      >
        <option value="support">support</option>
        <option value="engineer">engineer</option>
      </select>
      {draft !== u.role && (
        <ConfirmDialog
          trigger={
            <button type="button" className="btn-secondary" aria-label={`Change the role of ${u.email}`}>
              Change role…
            </button>
          }
          title={`Make ${u.email} ${other}?`}
          confirmLabel={`Make ${other}`}
          askReason={false}
          pending={pending}
          error={error}
          onConfirm={() => onConfirm(other)}
        >
          <p>
            {u.email} is {u.role} now. As {other} they can {CAN[other]}.
          </p>
          <p>Their sessions end at once; they sign in again with the new role.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

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
          {userMessage(error)}
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
                    <RoleControl
                      key={u.role}
                      u={u}
                      pending={setRole.isPending}
                      error={setRole.error ? userMessage(setRole.error) : null}
                      onConfirm={(role) => setRole.mutateAsync({ userId: u.id, role })}
                    />
                  </td>
                  <td>
                    {u.twoFactor ? "on" : "off"}
                    {u.twoFactor && (
                      <ConfirmDialog
                        trigger={
                          <button type="button" className="btn ml-2" aria-label={`Reset two-factor of ${u.email}`}>
                            Reset
                          </button>
                        }
                        title={`Reset the two-factor sign-in of ${u.email}?`}
                        confirmLabel="Reset two-factor"
                        askReason={false}
                        pending={resetTwoFactor.isPending}
                        error={resetTwoFactor.error ? userMessage(resetTwoFactor.error) : null}
                        onConfirm={() => resetTwoFactor.mutateAsync({ userId: u.id })}
                      >
                        <p>Their authenticator stops working for this account and their sessions end at once.</p>
                      </ConfirmDialog>
                    )}
                  </td>
                  <td>{u.activeSessions}</td>
                  <td>
                    {u.disabledAt ? (
                      <>
                        disabled <TimeText date={u.disabledAt} />
                      </>
                    ) : (
                      "active"
                    )}
                  </td>
                  <td>
                    <ConfirmDialog
                      trigger={
                        <button
                          type="button"
                          className="btn"
                          aria-label={`${u.disabledAt ? "Enable" : "Disable"} ${u.email}`}
                        >
                          {u.disabledAt ? "Enable" : "Disable"}
                        </button>
                      }
                      title={u.disabledAt ? `Enable ${u.email}?` : `Disable ${u.email}?`}
                      confirmLabel={u.disabledAt ? "Enable" : "Disable"}
                      askReason={false}
                      pending={setDisabled.isPending}
                      error={setDisabled.error ? userMessage(setDisabled.error) : null}
                      onConfirm={() => setDisabled.mutateAsync({ userId: u.id, disabled: !u.disabledAt })}
                    >
                      {u.disabledAt ? (
                        <p>
                          {u.email} can sign in again, as {u.role}.
                        </p>
                      ) : (
                        <p>
                          {u.email} is signed out at once ({u.activeSessions} active session
                          {u.activeSessions === 1 ? "" : "s"}) and cannot sign in until enabled again.
                        </p>
                      )}
                    </ConfirmDialog>
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
