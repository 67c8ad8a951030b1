"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "~/trpc/react";
import { absolute } from "../../_components/format";
import { OneTimeSecret } from "../../_components/OneTimeSecret";

const GRACE_OPTIONS = [
  { hours: 0, label: "none (old keys stop at once)" },
  { hours: 1, label: "1 hour" },
  { hours: 24, label: "24 hours" },
  { hours: 24 * 7, label: "7 days" },
];

export function ApiClients() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const clients = useQuery(trpc.apiClients.list.queryOptions());
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [grace, setGrace] = useState(24);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiClients.list.queryKey() });
  const create = useMutation(trpc.apiClients.create.mutationOptions({ onSuccess: refresh }));
  const issue = useMutation(trpc.apiClients.issueKey.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.apiClients.rotateKey.mutationOptions({ onSuccess: refresh }));
  const revoke = useMutation(trpc.apiClients.revokeKey.mutationOptions({ onSuccess: refresh }));
  const error = clients.error ?? create.error ?? issue.error ?? rotate.error ?? revoke.error;

  async function onCreate(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const name = String(data.get("name"));
    const email = String(data.get("contactEmail") ?? "").trim();
    const result = await create.mutateAsync({ name, contactEmail: email || null });
    setSecret({ label: `API key of ${name}`, value: result.apiKey });
    form.reset();
  }

  return (
    <>
      <h1 className="mb-2">API clients</h1>
      {error && (
        <p role="alert" className="bad">
          {error.message}
        </p>
      )}
      {secret && <OneTimeSecret label={secret.label} value={secret.value} onDone={() => setSecret(null)} />}

      <section className="card space-y-3">
        <h2>New API client</h2>
        <form onSubmit={onCreate} className="flex flex-wrap items-end gap-3">
          <label className="field">
            Name <input className="input" name="name" required maxLength={100} />
          </label>
          <label className="field">
            Contact e-mail <input className="input" name="contactEmail" type="email" maxLength={255} />
          </label>
          <button className="btn" type="submit" disabled={create.isPending}>
            Create client
          </button>
        </form>
      </section>

      <section className="card space-y-3">
        <h2>Clients</h2>
        <label className="field">
          Grace period when rotating{" "}
          <select className="input" value={grace} onChange={(e) => setGrace(Number(e.target.value))}>
            {GRACE_OPTIONS.map((o) => (
              <option key={o.hours} value={o.hours}>
                {o.label}
              </option>
            ))}
          </select>
        </label>
        {clients.data?.map((client) => (
          <section
            key={client.id}
            className="space-y-2 border-t border-slate-200 pt-3"
            aria-label={`Client ${client.name}`}
          >
            <h3>
              {client.name}{" "}
              <span className="muted">
                #{client.id} {client.contactEmail ?? ""}
              </span>
            </h3>
            <div className="table-box" tabIndex={0}>
              <table className="data-table">
                <thead>
                  <tr>
                    <th>Key</th>
                    <th>Issued</th>
                    <th>State</th>
                    <th>Works until</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {client.keys.map((key) => (
                    <tr key={key.id}>
                      <td>
                        <code>{key.keyPrefix}…</code>
                      </td>
                      <td>{absolute(key.createdAt)}</td>
                      <td>{key.state}</td>
                      <td>
                        {key.state === "revoked"
                          ? `revoked ${absolute(key.revokedAt)}`
                          : key.expiresAt
                            ? absolute(key.expiresAt)
                            : "—"}
                      </td>
                      <td>
                        {(key.state === "active" || key.state === "grace") && (
                          <button
                            type="button"
                            className="btn"
                            aria-label={`Revoke key ${key.keyPrefix}`}
                            onClick={() =>
                              window.confirm(`Revoke ${key.keyPrefix}… now?`) && revoke.mutate({ keyId: key.id })
                            }
                          >
                            Revoke
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <button
              type="button"
              className="btn"
              onClick={async () => {
                const r = await rotate.mutateAsync({ clientId: client.id, graceHours: grace });
                setSecret({ label: `New API key of ${client.name}`, value: r.apiKey });
              }}
            >
              Rotate key of {client.name}
            </button>{" "}
            <button
              type="button"
              className="btn"
              onClick={async () => {
                const r = await issue.mutateAsync({ clientId: client.id });
                setSecret({ label: `New API key of ${client.name}`, value: r.apiKey });
              }}
            >
              Issue another key to {client.name}
            </button>
          </section>
        ))}
      </section>
      <p className="muted">
        A revoked key, or one whose grace period ended, is refused at once by this server and within the API key cache
        lifetime (API_KEY_CACHE_TTL_MS, 30 s by default) by every other running instance.
      </p>
    </>
  );
}
