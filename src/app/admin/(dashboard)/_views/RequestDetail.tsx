"use client";

import { parseRecordId } from "~/lib/recordId";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { formatMoney, prettyJson } from "../../_components/format";
import { Badge, PhaseBadge } from "../../_components/ui/Badge";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { MismatchWarning } from "../../_components/MismatchWarning";
import { Time } from "../../_components/ui/Time";
import { EventsOf } from "./EventsOf";

type Detail = RouterOutputs["requests"]["byId"];
type Entry = Detail["timeline"][number];

/** How each key event reads on the timeline. */
function describeEntry(e: Entry): {
  label: string;
  tone: "progress" | "warning" | "ok" | "danger" | "neutral";
  text: string;
} {
  const who = e.otherClient ? ` by another client (${e.otherClient.name})` : "";
  switch (e.kind) {
    case "claimed":
      return { label: "Claimed", tone: "progress", text: "The first request claimed the key and went to the gateway." };
    case "in_progress":
      return {
        label: "409",
        tone: "neutral",
        text:
          "A retry arrived while the first was still running: 409 request_in_progress" +
          `${e.detail ? ` (${e.detail})` : ""}.`,
      };
    case "replayed":
      return {
        label: "Replayed",
        tone: "ok",
        text: `A retry got the stored answer again${e.detail ? ` (${e.detail})` : ""}.`,
      };
    case "key_reused":
      return {
        label: "Reuse",
        tone: "danger",
        text: `The key came again with another payload${who}: 422 idempotency_key_reused.`,
      };
    case "released":
      return {
        label: "Released",
        tone: "warning",
        text:
          e.detail === "error"
            ? "The work failed with an error before an answer was stored: the claim was given back for the next retry."
            : "The gateway's outcome was unknown: the claim was given back for the next retry.",
      };
    case "taken_over":
      return {
        label: "Taken over",
        tone: "warning",
        text:
          e.detail === "recovery"
            ? "The sweeper (or the ledger reconciliation) took the record over to finish it."
            : "A retry took the claim over.",
      };
    case "answered": {
      const status = e.answer?.status ?? 0;
      const gone = e.answer?.clientGone ? " The client had already hung up." : "";
      const took = e.answer?.latencyMs != null ? ` after ${e.answer.latencyMs} ms` : "";
      return {
        label: `Answered ${status}`,
        tone: status >= 500 ? "danger" : status >= 400 ? "warning" : "ok",
        text: `This attempt was answered ${status}${e.detail ? ` ${e.detail}` : ""}${took}.${gone}`,
      };
    }
    case "completed": {
      const [by, status] = (e.detail ?? "").split(" ");
      const how =
        by === "reconciled"
          ? "by the sweeper: the gateway had charged"
          : by === "abandoned"
            ? "by the sweeper: the gateway had not charged"
            : "by the request";
      return {
        label: `Completed ${status ?? ""}`.trim(),
        tone: by === "abandoned" ? "danger" : "ok",
        text: `The answer was stored, ${how}.`,
      };
    }
  }
}

const show = (v: unknown) => (v === undefined ? "(absent)" : JSON.stringify(v));

export function RequestDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const valid = parseRecordId(id) !== null;
  const query = useQuery({ ...trpc.requests.byId.queryOptions({ id }, { refetchInterval: 5_000 }), enabled: valid });
  if (!valid)
    return (
      <p role="alert" className="card bad">
        “{id}” is not a request record id.
      </p>
    );
  return (
    <QueryState query={query} what={`request record ${id}`}>
      {(d) => <Loaded d={d} />}
    </QueryState>
  );
}

function Loaded({ d }: { d: Detail }) {
  const r = d.request;
  const counts = d.counts as Record<string, number | undefined>;
  return (
    <>
      <PageHeader
        title={
          <>
            Request <code className="break-all">{r.idempotencyKey ?? `keyless #${r.id}`}</code>
          </>
        }
      >
        {r.phase.description}
      </PageHeader>
      <MismatchWarning mismatches={d.openMismatches} />
      <div className="grid gap-4 lg:grid-cols-2">
        <section className="card" aria-label="The record">
          <h2 className="mb-2">The record</h2>
          <dl className="facts" data-testid="request-detail">
            <dt>State</dt>
            <dd className="flex flex-wrap items-center gap-2">
              <PhaseBadge phase={r.phase} /> attempt {r.attempt}
            </dd>
            <dt>API client</dt>
            <dd>
              {r.apiClient.name} (#{r.apiClient.id})
            </dd>
            <dt>Route</dt>
            <dd>{r.route}</dd>
            <dt>Created</dt>
            <dd>
              <Time date={r.createdAt} precision="ms" />
            </dd>
            <dt>Last change</dt>
            <dd>
              <Time date={r.updatedAt} precision="ms" />
            </dd>
            <dt>Expires</dt>
            <dd>
              <Time date={r.expiresAt} />
            </dd>
            <dt>Retries, replays, reuses</dt>
            <dd data-testid="event-counts">
              {`${counts.in_progress ?? 0} × 409 while in flight, ${counts.replayed ?? 0} replays, `}
              {`${counts.key_reused ?? 0} reuse attempts, ${counts.taken_over ?? 0} take-overs`}
            </dd>
          </dl>
        </section>
        <section className="card" aria-label="What was asked">
          <h2 className="mb-2">What was asked</h2>
          {r.fields ? (
            <dl className="facts" data-testid="request-fields">
              {Object.entries(r.fields).map(([name, value]) => (
                <div key={name} className="contents">
                  <dt>
                    <code>{name}</code>
                  </dt>
                  <dd>
                    <code>{JSON.stringify(value)}</code>
                  </dd>
                </div>
              ))}
              <dt>
                <code>card_token</code>
              </dt>
              <dd className="muted">never stored</dd>
            </dl>
          ) : (
            <p className="muted">This record is older than stored request fields; only its hash is known.</p>
          )}
          <p className="muted mt-2 text-xs break-all">Request hash {r.requestHash}</p>
        </section>
      </div>

      <section className="card" aria-label="Answer and money">
        <h2 className="mb-2">The answer stored</h2>
        {r.responseBody ? (
          <>
            <p className="mb-1">Status {r.responseStatus}</p>
            {/* biome-ignore lint/a11y/useSemanticElements: a focusable scrolling box (axe) */}
            <pre
              className="overflow-x-auto rounded bg-slate-50 p-3"
              data-testid="stored-response"
              tabIndex={0}
              role="region"
              aria-label="The answer stored, as JSON"
            >
              {prettyJson(r.responseBody)}
            </pre>
          </>
        ) : (
          <p className="muted">No answer yet: the request is {r.phase.label.toLowerCase()}.</p>
        )}
        <h3 className="mt-3 mb-1">Charge</h3>
        {r.charge ? (
          <dl className="facts" data-testid="linked-charge">
            <dt>Charge</dt>
            <dd>
              <Link href={`/admin/charges/${r.charge.id}`} className="font-mono">
                {r.charge.id}
              </Link>
            </dd>
            <dt>Amount</dt>
            <dd>{formatMoney(r.charge.amountCents, r.charge.currency)}</dd>
            <dt>Status</dt>
            <dd>
              {r.charge.status}
              {r.charge.failureCode && ` (${r.charge.failureCode})`}
            </dd>
            <dt>Customer</dt>
            <dd>
              {r.charge.customerId ? (
                <Link href={`/admin/customers/${encodeURIComponent(r.charge.customerId)}`}>{r.charge.customerId}</Link>
              ) : (
                "—"
              )}
            </dd>
            <dt>Gateway charge</dt>
            <dd>
              <code>{r.charge.gatewayChargeId}</code>
            </dd>
          </dl>
        ) : r.refund ? (
          <dl className="facts" data-testid="linked-refund">
            <dt>Refund</dt>
            <dd>
              <code>{r.refund.id}</code> of charge{" "}
              <Link href={`/admin/charges/${r.refund.chargeId}`} className="font-mono">
                {r.refund.chargeId}
              </Link>
            </dd>
            <dt>Amount</dt>
            <dd>{formatMoney(r.refund.amountCents, r.refund.currency)}</dd>
            <dt>Reason</dt>
            <dd>{r.refund.reason ?? "none given"}</dd>
            <dt>Gateway refund</dt>
            <dd>
              <code>{r.refund.gatewayRefundId}</code>
            </dd>
          </dl>
        ) : (
          <p className="muted">No money row recorded for this request.</p>
        )}
      </section>

      <EventsOf requestId={String(r.id)} />

      <section className="card" aria-label="Timeline">
        <h2 className="mb-2">Timeline of the key</h2>
        {d.timelineTruncated && <p className="muted text-sm">Showing the latest 200 events.</p>}
        <ol className="space-y-2" data-testid="timeline">
          {d.timeline.map((e) => {
            const { label, tone, text } = describeEntry(e);
            return (
              <li
                key={e.id}
                className="flex flex-wrap items-baseline gap-x-3 gap-y-1 border-l-2 border-slate-300 pl-3"
                data-kind={e.kind}
                data-status={e.answer?.status}
              >
                <Badge tone={tone}>{label}</Badge>
                <span className="min-w-0 flex-1">{text}</span>
                <span className="text-sm muted">
                  <Time date={e.at} precision="ms" /> ·{" "}
                  {e.fromRecord ? "from the record (no event written)" : e.instance}
                  {e.attempt !== null && ` · attempt ${e.attempt}`}
                  {e.apiRequestId && (
                    <>
                      {" · "}
                      <code data-testid="request-id">{e.apiRequestId}</code>
                    </>
                  )}
                </span>
              </li>
            );
          })}
        </ol>
        <p className="muted mt-2 text-xs">
          Events are written once a second by each instance; a crash can lose its last second of 409s and replays.
        </p>
      </section>

      {d.reuses.length > 0 && (
        <section className="card" aria-label="Reuse attempts">
          <h2 className="mb-2">Reuse attempts</h2>
          <ul className="space-y-3" data-testid="reuses">
            {d.reuses.map((u) => (
              <li key={u.id}>
                <p className="m-0">
                  <Time date={u.at} />:{" "}
                  {u.otherClient ? (
                    <>
                      another client, <strong>{u.otherClient.name}</strong>, sent this key. What it sent is not shown
                      here.
                    </>
                  ) : (
                    <>the same client sent this key with another payload.</>
                  )}
                </p>
                {u.diff && (
                  <table className="data-table mt-1 max-w-xl">
                    <caption>Fields that differed</caption>
                    <thead>
                      <tr>
                        <th scope="col">Field</th>
                        <th scope="col">First request</th>
                        <th scope="col">This attempt</th>
                      </tr>
                    </thead>
                    <tbody>
                      {u.diff.differences.map((f) => (
                        <tr key={f.field}>
                          <td>
                            <code>{f.field}</code>
                          </td>
                          <td>
                            <code>{show(f.stored)}</code>
                          </td>
                          <td>
                            <code>{show(f.attempted)}</code>
                          </td>
                        </tr>
                      ))}
                      {u.diff.cardToken === "differed" && (
                        <tr>
                          <td>
                            <code>card_token</code>
                          </td>
                          <td colSpan={2}>
                            differed (not stored; every other field is the same, the request hash is not)
                          </td>
                        </tr>
                      )}
                    </tbody>
                  </table>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
