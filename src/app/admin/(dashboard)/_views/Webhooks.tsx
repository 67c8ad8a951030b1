"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "~/trpc/react";
import { userMessage } from "../../_components/errorMessage";
import { OneTimeSecret } from "../../_components/OneTimeSecret";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { TimeText } from "../../_components/ui/Time";

type Endpoint = {
  id: string;
  url: string;
  clientName: string;
  enabled_events: string[];
  status: string;
  disabled_reason: string | null;
  failing_since: string | null;
};

/** One delivery's attempts: when, how long, what the endpoint answered (its first bytes) or why nothing. */
function Attempts({ deliveryId }: { deliveryId: string }) {
  const trpc = useTRPC();
  const attempts = useQuery(trpc.webhooks.attempts.queryOptions({ deliveryId }));
  return (
    <QueryState query={attempts} what="the attempts" isEmpty={(a) => a.length === 0} empty={<p>No attempt yet.</p>}>
      {(list) => (
        <ol className="space-y-1 text-sm" aria-label={`Attempts of delivery ${deliveryId}`}>
          {list.map((a) => (
            <li key={`${a.attempt}-${String(a.startedAt)}`}>
              #{a.attempt} <TimeText date={a.startedAt} precision="s" /> · {a.durationMs} ms ·{" "}
              {a.status === null ? `no answer: ${a.error ?? ""}` : `HTTP ${a.status}`}
              {a.responseBody ? (
                <>
                  {" "}
                  · <code className="break-all">{a.responseBody.slice(0, 200)}</code>
                </>
              ) : null}
            </li>
          ))}
        </ol>
      )}
    </QueryState>
  );
}

/** An endpoint's deliveries: each event, its state, attempts, the next retry; its attempts; send again. */
function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const deliveries = useQuery(trpc.webhooks.deliveries.queryOptions({ id: endpoint.id }));
  const [open, setOpen] = useState<string | null>(null);
  const again = useMutation(
    trpc.webhooks.sendAgain.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.deliveries.queryKey() }),
    }),
  );
  return (
    <QueryState
      query={deliveries}
      what="the deliveries"
      isEmpty={(d) => d.length === 0}
      empty={<p>No deliveries yet.</p>}
    >
      {(list) => (
        <div className="table-box" tabIndex={0}>
          {again.error && (
            <p role="alert" className="bad">
              {userMessage(again.error)}
            </p>
          )}
          <table className="data-table" aria-label={`Deliveries to ${endpoint.url}`}>
            <thead>
              <tr>
                <th>Event</th>
                <th>State</th>
                <th>Attempts</th>
                <th>Last answer</th>
                <th>Next retry</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((d) => (
                <tr key={d.id}>
                  <td>
                    {d.eventType} <code className="text-xs">{d.eventId}</code>
                  </td>
                  <td>{d.state}</td>
                  <td>
                    <button
                      type="button"
                      className="underline"
                      aria-expanded={open === d.id}
                      onClick={() => setOpen(open === d.id ? null : d.id)}
                    >
                      {d.attempts} attempt{d.attempts === 1 ? "" : "s"}
                    </button>
                    {open === d.id && <Attempts deliveryId={d.id} />}
                  </td>
                  <td>{d.lastStatus !== null ? `HTTP ${d.lastStatus}` : (d.lastError ?? "—")}</td>
                  <td>{d.nextAttemptAt ? <TimeText date={d.nextAttemptAt} precision="s" /> : "—"}</td>
                  <td>
                    <button
                      type="button"
                      className="btn"
                      disabled={again.isPending}
                      onClick={() => again.mutate({ deliveryId: d.id })}
                    >
                      Send again
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </QueryState>
  );
}

export function Webhooks() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const endpoints = useQuery(trpc.webhooks.endpoints.queryOptions());
  const clients = useQuery(trpc.apiClients.list.queryOptions());
  const [secret, setSecret] = useState<{ label: string; value: string; note?: string } | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.endpoints.queryKey() });
  const create = useMutation(trpc.webhooks.create.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.webhooks.rotate.mutationOptions({ onSuccess: refresh }));
  const setEnabled = useMutation(trpc.webhooks.setEnabled.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.webhooks.remove.mutationOptions({ onSuccess: refresh }));
  const sendTest = useMutation(trpc.webhooks.sendTest.mutationOptions());
  const error = create.error ?? setEnabled.error ?? sendTest.error;

  async function onCreate(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const url = String(data.get("url"));
    const eventTypes = String(data.get("events") || "*")
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    const result = await create.mutateAsync({ apiClientId: Number(data.get("client")), url, eventTypes });
    setSecret({ label: `Signing secret of ${url}`, value: result.secret });
    form.reset();
  }

  return (
    <>
      <PageHeader title="Webhooks">
        Where each API client&apos;s events are posted, signed (Standard Webhooks), until a 2xx; retried with backoff
        for up to 3 days. An endpoint failing that long is disabled, and says why.
      </PageHeader>
      {error && (
        <p role="alert" className="bad">
          {userMessage(error)}
        </p>
      )}
      {notice && <p role="status">{notice}</p>}
      {secret && (
        <OneTimeSecret label={secret.label} value={secret.value} onDone={() => setSecret(null)}>
          {secret.note && <p className="m-0 text-sm">{secret.note}</p>}
        </OneTimeSecret>
      )}
      <section className="card space-y-3">
        <h2>New endpoint</h2>
        <form onSubmit={onCreate} className="flex flex-wrap items-end gap-3">
          <label className="field">
            API client
            <select className="input" name="client" required>
              {clients.data?.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name} (#{c.id})
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            URL <input className="input" name="url" type="url" required maxLength={2048} />
          </label>
          <label className="field">
            Event types (comma-separated, or *) <input className="input" name="events" defaultValue="*" />
          </label>
          <button className="btn" type="submit" disabled={create.isPending}>
            Create endpoint
          </button>
        </form>
      </section>
      <section className="card space-y-3">
        <h2>Endpoints</h2>
        <QueryState
          query={endpoints}
          what="the endpoints"
          isEmpty={(e) => e.length === 0}
          empty={<p>No endpoint yet.</p>}
        >
          {(list) => (
            <>
              {list.map((e) => (
                <section
                  key={e.id}
                  className="space-y-2 border-t border-slate-200 pt-3"
                  aria-label={`Endpoint ${e.url}`}
                >
                  <h3 className="break-all">
                    {e.url} <span className="muted">{e.clientName}</span>
                  </h3>
                  <p className="m-0 text-sm">
                    <code>{e.id}</code> · {e.enabled_events.join(", ")} · <strong>{e.status}</strong>
                    {e.failing_since && (
                      <>
                        {" "}
                        · failing since <TimeText date={new Date(e.failing_since)} precision="s" />
                      </>
                    )}
                  </p>
                  {e.disabled_reason && (
                    <p className="bad m-0 text-sm" data-testid="disabled-reason">
                      Disabled: {e.disabled_reason}
                    </p>
                  )}
                  <div className="flex flex-wrap gap-2">
                    <button
                      type="button"
                      className="btn"
                      aria-expanded={shown === e.id}
                      onClick={() => setShown(shown === e.id ? null : e.id)}
                    >
                      {shown === e.id ? "Hide deliveries" : "Deliveries"}
                    </button>
                    <button
                      type="button"
                      className="btn"
                      disabled={sendTest.isPending}
                      onClick={async () => {
                        const { eventId } = await sendTest.mutateAsync({ id: e.id });
                        setNotice(`Test event ${eventId} queued for ${e.url}.`);
                      }}
                    >
                      Send a test event
                    </button>
                    <button
                      type="button"
                      className="btn"
                      disabled={setEnabled.isPending}
                      onClick={() => setEnabled.mutate({ id: e.id, enabled: e.status !== "enabled" })}
                    >
                      {e.status === "enabled" ? "Disable" : "Enable"}
                    </button>
                    <ConfirmDialog
                      trigger={
                        <button type="button" className="btn">
                          Rotate secret
                        </button>
                      }
                      title={`Rotate the signing secret of ${e.url}?`}
                      confirmLabel="Rotate the secret"
                      askReason={false}
                      pending={rotate.isPending}
                      error={rotate.error ? userMessage(rotate.error) : null}
                      onConfirm={async () => {
                        const result = await rotate.mutateAsync({ id: e.id, overlapHours: 24 });
                        setSecret({
                          label: `New signing secret of ${e.url}`,
                          value: result.secret,
                          note: "The previous secret keeps signing beside it for 24 hours.",
                        });
                      }}
                    >
                      <p>A new secret is shown once; for 24 hours both sign every delivery.</p>
                    </ConfirmDialog>
                    <ConfirmDialog
                      trigger={
                        <button type="button" className="btn">
                          Delete
                        </button>
                      }
                      title={`Delete the endpoint ${e.url}?`}
                      confirmLabel="Delete"
                      askReason={false}
                      pending={remove.isPending}
                      error={remove.error ? userMessage(remove.error) : null}
                      onConfirm={() => remove.mutateAsync({ id: e.id })}
                    >
                      <p>Its deliveries not yet made are cancelled.</p>
                    </ConfirmDialog>
                  </div>
                  {shown === e.id && <Deliveries endpoint={e} />}
                </section>
              ))}
            </>
          )}
        </QueryState>
      </section>
    </>
  );
}
