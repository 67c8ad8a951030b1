"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "~/trpc/react";
import { TimeText, useTimeText } from "../../_components/ui/Time";
import { userMessage } from "../../_components/errorMessage";
import { OneTimeSecret } from "../../_components/OneTimeSecret";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";

const GRACE_OPTIONS = [
  { hours: 0, label: "none (old keys stop at once)" },
  { hours: 1, label: "1 hour" },
  { hours: 24, label: "24 hours" },
  { hours: 24 * 7, label: "7 days" },
];

const graceLabel = (hours: number) => GRACE_OPTIONS.find((o) => o.hours === hours)?.label ?? `${hours} hours`;

type Secret = { label: string; value: string; note?: string };

/**
 * Rotation only through a dialog that states its effect and the grace period chosen in it: when the current keys
 * stop working. The new key is then shown once, with its grace period and a copy button.
 */
function RotateKey({
  client,
  pending,
  error,
  onRotate,
}: {
  client: { id: number; name: string; keys: { state: string }[] };
  pending: boolean;
  error: string | null;
  onRotate: (graceHours: number) => Promise<unknown>;
}) {
  const [grace, setGrace] = useState(24);
  const live = client.keys.filter((k) => k.state === "active" || k.state === "grace").length;
  const graceEnd = useTimeText()(new Date(Date.now() + grace * 3_600_000), "min");
  return (
    <ConfirmDialog
      trigger={
        <button type="button" className="btn">
          Rotate key of {client.name}
        </button>
      }
      title={`Rotate the API key of ${client.name}?`}
      confirmLabel="Rotate the key"
      askReason={false}
      pending={pending}
      error={error}
      onConfirm={() => onRotate(grace)}
    >
      <p>
        A new key is issued and shown once. {client.name}&apos;s {live} working key{live === 1 ? "" : "s"}{" "}
        {grace === 0
          ? "stop working at once: requests still sending them get 401."
          : `keep working for ${graceLabel(grace)} (until about ${graceEnd}), then stop.`}
      </p>
      <label className="field">
        Grace period when rotating
        <select className="input" value={grace} onChange={(e) => setGrace(Number(e.target.value))}>
          {GRACE_OPTIONS.map((o) => (
            <option key={o.hours} value={o.hours}>
              {o.label}
            </option>
          ))}
        </select>
      </label>
    </ConfirmDialog>
  );
}

export function ApiClients() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const clients = useQuery(trpc.apiClients.list.queryOptions());
  const [secret, setSecret] = useState<Secret | null>(null);
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
          {userMessage(error)}
        </p>
      )}
      {secret && (
        <OneTimeSecret label={secret.label} value={secret.value} onDone={() => setSecret(null)}>
          {secret.note && <p className="m-0 text-sm">{secret.note}</p>}
        </OneTimeSecret>
      )}

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
                      <td>
                        <TimeText date={key.createdAt} />
                      </td>
                      <td>{key.state}</td>
                      <td>
                        {key.state === "revoked" ? (
                          <>
                            revoked <TimeText date={key.revokedAt} />
                          </>
                        ) : key.expiresAt ? (
                          <TimeText date={key.expiresAt} />
                        ) : (
                          "—"
                        )}
                      </td>
                      <td>
                        {(key.state === "active" || key.state === "grace") && (
                          <ConfirmDialog
                            trigger={
                              <button type="button" className="btn" aria-label={`Revoke key ${key.keyPrefix}`}>
                                Revoke
                              </button>
                            }
                            title={`Revoke ${key.keyPrefix}… now?`}
                            confirmLabel="Revoke"
                            askReason={false}
                            pending={revoke.isPending}
                            error={revoke.error ? userMessage(revoke.error) : null}
                            onConfirm={() => revoke.mutateAsync({ keyId: key.id })}
                          >
                            <p>Requests with this key get 401 at once here, and within 30 s on every instance.</p>
                          </ConfirmDialog>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <RotateKey
              client={client}
              pending={rotate.isPending}
              error={rotate.error ? userMessage(rotate.error) : null}
              onRotate={async (graceHours) => {
                const r = await rotate.mutateAsync({ clientId: client.id, graceHours });
                setSecret({
                  label: `New API key of ${client.name}`,
                  value: r.apiKey,
                  note:
                    graceHours === 0
                      ? "The previous keys stopped working at once."
                      : `The previous keys keep working for ${graceLabel(graceHours)} (grace period), then stop.`,
                });
              }}
            />{" "}
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
