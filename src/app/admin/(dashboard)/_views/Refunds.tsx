"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import type { RouterOutputs } from "~/trpc/react";
import { useTRPC } from "~/trpc/react";
import { userMessage } from "../../_components/errorMessage";
import { formatGap, formatMoney } from "../../_components/format";
import { Badge } from "../../_components/ui/Badge";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { RefundLimits } from "./Approvals";

const REASONS = [
  ["duplicate", "Duplicate: the customer was charged twice"],
  ["requested_by_customer", "Requested by the customer"],
  ["fraudulent", "Fraudulent"],
] as const;

type Reason = (typeof REASONS)[number][0];
type OfCharge = RouterOutputs["refunds"]["ofCharge"];
type Case = OfCharge["cases"][number];
type RefundView = Omit<OfCharge["refunds"][number], "requestId">;

/** A case whose other charge was refunded (or is being refunded): this charge's refund is the override. */
const resolvedByOther = (c: Case) => c.other !== null && c.other.refundedCents + c.other.heldCents > 0;

/**
 * A charge's refunds, its double-charge cases and the button that refunds it (support and engineers). The refund
 * is the API's idempotent operation under a key made from what this page showed (server: refunds/fromDashboard.ts),
 * so a double click, a retry or a second tab showing the same charge refund it once.
 */
export function ChargeRefunds({ chargeId }: { chargeId: string }) {
  const trpc = useTRPC();
  const query = useQuery(trpc.refunds.ofCharge.queryOptions({ chargeId }));
  return (
    <QueryState query={query} what="the refunds">
      {({ charge, refunds, cases }) => {
        if (!charge) return null;
        const left = charge.amountCents - charge.amountRefundedCents - charge.refundHeldCents;
        const money = (cents: number) => formatMoney(cents, charge.currency);
        return (
          <section className="card space-y-2" aria-label="Refunds" data-testid="refunds">
            <h2 className="flex flex-wrap items-center gap-2">
              Refunds
              {charge.amountRefundedCents > 0 && (
                <Badge tone={left === 0 ? "ok" : "warning"}>
                  {left === 0 ? "refunded" : `partly refunded: ${money(charge.amountRefundedCents)}`}
                </Badge>
              )}
            </h2>
            {cases.map((c) => (
              <CaseSummary key={c.key} chargeId={chargeId} c={c} />
            ))}
            {refunds.length === 0 ? (
              <p className="m-0 muted">No refund yet.</p>
            ) : (
              <ul className="m-0 space-y-2" data-testid="refund-list">
                {refunds.map((r) => (
                  <li key={r.id} data-refund={r.id}>
                    <code>{r.id}</code> {money(r.amountCents)} <ReasonBadge reason={r.reason} /> <MadeBy refund={r} />
                    {r.requestId && (
                      <>
                        {" · "}
                        <Link href={`/admin/requests/${r.requestId}`}>its request</Link>
                      </>
                    )}
                    <Notes refund={r} />
                  </li>
                ))}
              </ul>
            )}
            <RefundDialog chargeId={chargeId} />
          </section>
        );
      }}
    </QueryState>
  );
}

/** When a refund was made, and by whom. */
const MadeBy = ({ refund }: { refund: RefundView }) => (
  <>
    <Time date={refund.at} /> by {refund.by}
  </>
);

/** Support's notes on a refund: the confirm's, then any later confirm's that found it done. */
function Notes({ refund }: { refund: RefundView }) {
  if (refund.notes.length === 0) return null;
  return (
    <ul className="m-0 mt-1 list-none space-y-1 border-l-2 border-slate-300 pl-3 text-sm" data-testid="refund-notes">
      {refund.notes.map((n) => (
        <li key={`${n.at.toISOString()}-${n.by}`}>
          “{n.note}” <span className="muted">— {n.by}</span>
          {n.kind === "again" && <span className="muted"> (confirmed again: it was already done)</span>}
          {n.kind === "both_halves" && <span className="muted"> (both charges of the double charge refunded)</span>}
        </li>
      ))}
    </ul>
  );
}

/** Who refunded which charge of a case, when, and why, in one sentence. */
function RefundSentence({ refund, chargeId, currency }: { refund: RefundView; chargeId: string; currency: string }) {
  return (
    <>
      <Link href={`/admin/charges/${chargeId}`}>{chargeId}</Link> was refunded{" "}
      {formatMoney(refund.amountCents, currency)} on <Time date={refund.at} showRelative={false} /> by {refund.by}
      {refund.notes[0] ? <>: “{refund.notes[0].note}”</> : "."}
    </>
  );
}

/** One double-charge case of this charge, and where it stands. */
function CaseSummary({ chargeId, c }: { chargeId: string; c: Case }) {
  const otherId = c.laterId === chargeId ? c.earlierId : c.laterId;
  const first = c.status.firstRefund;
  return (
    <div
      className={`rounded border p-2 text-sm ${c.status.resolved ? "border-emerald-300" : "border-amber-400"}`}
      data-testid="double-charge-case"
      data-state={c.status.state}
    >
      <p className="m-0">
        <strong>{c.evidence.label}</strong> with <Link href={`/admin/charges/${otherId}`}>{otherId}</Link>: their
        requests arrived {formatGap(c.gapMs)} apart. One case: refunding either charge gives back what was paid twice.
      </p>
      <p className="m-0 mt-1" data-testid="case-status">
        {first ? (
          <>
            {c.status.state === "both_refunded" ? "Both charges refunded. " : "Resolved: "}
            <RefundSentence refund={first} chargeId={first.chargeId} currency={c.other?.currency ?? ""} />
          </>
        ) : c.status.state === "refunding" ? (
          "A refund of one of its charges is being made."
        ) : (
          "Not refunded yet."
        )}
      </p>
    </div>
  );
}

/**
 * The refund dialog of a charge, wherever it is shown (the charge page, the incident view): its data is read when
 * it opens, so a case resolved in another tab is seen. A half whose other half was refunded warns and asks for the
 * override and a reason; a confirm that finds the refund made already says so, and its note is kept.
 */
export function RefundDialog({ chargeId, label = "Refund…" }: { chargeId: string; label?: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  // Read once first opened (0: never), and kept read: the outcome of a refund is said from it. Read again at every
  // opening, and confirmable only once that read is in: the page's copy may be older than a refund made in another
  // tab, and a confirm must say what the person saw.
  const [openedAt, setOpenedAt] = useState(0);
  const query = useQuery({ ...trpc.refunds.ofCharge.queryOptions({ chargeId }), enabled: openedAt > 0 });
  const [reason, setReason] = useState<Reason | "">("");
  const [amount, setAmount] = useState("");
  const [bothHalves, setBothHalves] = useState(false);
  const create = useMutation(
    trpc.refunds.create.mutationOptions({
      onSuccess: () => {
        setAmount(""); // the next refund is a new intention, of what is left by default
        setBothHalves(false);
      },
      // Refused (the other half refunded meanwhile, say) or done: what the page shows is read again.
      onSettled: () => queryClient.invalidateQueries(),
    }),
  );
  const data = query.data;
  const charge = data?.charge;
  const left = charge ? charge.amountCents - charge.amountRefundedCents - charge.refundHeldCents : 0;
  const money = (cents: number) => formatMoney(cents, charge?.currency ?? "");
  const partial = amount.trim() === "" ? undefined : Math.round(Number(amount) * 100);
  const amountProblem =
    partial !== undefined && !(Number.isInteger(partial) && partial >= 1 && partial <= left)
      ? `Enter an amount between ${money(1)} and ${money(left)}.`
      : null;
  const overridden = data?.cases.filter(resolvedByOther) ?? [];
  const open_cases = data?.cases.filter((c) => !resolvedByOther(c)) ?? [];
  const made = create.data?.status === "refunded" ? create.data : undefined;
  const done = made ? data?.refunds.find((r) => r.id === made.refundId) : undefined;
  // Known to have nothing left (a declined charge moved no money): said instead of the button, the outcome kept.
  const nothingLeft = charge ? charge.status !== "succeeded" || left <= 0 : false;
  return (
    <div className="space-y-2">
      {nothingLeft && !open ? (
        <p className="m-0 text-sm muted">
          {charge?.status === "succeeded" ? "Nothing is left to refund." : "A declined charge moved no money."}
        </p>
      ) : (
        <ConfirmDialog
          trigger={
            <button type="button" className="btn" data-testid="refund-button">
              {label}
            </button>
          }
          onOpenChange={(next) => {
            setOpen(next);
            if (next) {
              setOpenedAt(Date.now());
              void query.refetch();
              create.reset();
              setReason("");
              setBothHalves(false);
            }
          }}
          title={`Refund charge ${chargeId}`}
          confirmLabel={`Refund ${money(partial ?? left)}`}
          pending={create.isPending}
          ready={
            charge !== undefined &&
            charge !== null &&
            query.dataUpdatedAt >= openedAt &&
            !query.isFetching &&
            (partial !== undefined || left > 0) &&
            reason !== "" &&
            (overridden.length === 0 || bothHalves)
          }
          reasonLabel={
            overridden.length > 0
              ? "Why refund both charges? (kept with the refund, for support)"
              : "Note (kept with the refund, for support)"
          }
          error={amountProblem ?? (create.error ? userMessage(create.error) : null)}
          onConfirm={(note) =>
            amountProblem || !charge || reason === ""
              ? Promise.reject(new Error(amountProblem ?? "not ready"))
              : create.mutateAsync({
                  chargeId,
                  seenRefundedCents: charge.amountRefundedCents,
                  amountCents: partial,
                  reason,
                  note,
                  bothHalves: overridden.length > 0 ? true : undefined,
                })
          }
        >
          {!data || !charge ? (
            <p className="m-0" role="status">
              {query.error ? `Could not load the charge: ${userMessage(query.error)}` : "Loading the charge…"}
            </p>
          ) : (
            <>
              <p className="m-0">
                <Effect refund={money(partial ?? left)} of={money(charge.amountCents)} chargeId={chargeId} />
                {charge.amountRefundedCents > 0 && ` ${money(charge.amountRefundedCents)} was refunded already.`}
              </p>
              <RefundLimits />
              {overridden.map((c) => (
                <div
                  key={c.key}
                  role="alert"
                  className="rounded border border-red-400 bg-red-50 p-2"
                  data-testid="twin-refunded"
                >
                  <p className="m-0 font-medium">The customer has had this double charge back already.</p>
                  <p className="m-0">
                    {c.status.firstRefund ? (
                      <RefundSentence
                        refund={c.status.firstRefund}
                        chargeId={c.status.firstRefund.chargeId}
                        currency={charge.currency}
                      />
                    ) : (
                      <>The other charge, {c.other?.id}, is being refunded.</>
                    )}{" "}
                    This charge is the other half of the same case ({c.evidence.label.toLowerCase()}).
                  </p>
                  <label className="mt-1 flex items-start gap-2">
                    <input type="checkbox" checked={bothHalves} onChange={(e) => setBothHalves(e.target.checked)} />
                    <span>Refund this charge too: the customer gets both charges back (recorded as an override).</span>
                  </label>
                </div>
              ))}
              {open_cases.map((c) => (
                <p key={c.key} className="m-0" data-testid="refund-evidence">
                  {c.evidence.label}: <code>{c.laterId === chargeId ? c.earlierId : c.laterId}</code> charged the same
                  customer the same amount, the requests {formatGap(c.gapMs)} apart. Refunding one of the two resolves
                  the case.
                </p>
              ))}
              <label className="field">
                Amount ({charge.currency.toUpperCase()}; empty: all that is left, {money(left)})
                <input
                  className="input"
                  inputMode="decimal"
                  value={amount}
                  onChange={(e) => setAmount(e.target.value)}
                  placeholder={(left / 100).toFixed(2)}
                  aria-describedby={`refund-amount-help-${chargeId}`}
                />
              </label>
              <span id={`refund-amount-help-${chargeId}`} className="text-xs muted">
                For a partial refund, enter less.
              </span>
              <label className="field">
                Reason
                <select
                  className="input"
                  value={reason}
                  required
                  onChange={(e) => setReason(e.target.value as Reason | "")}
                >
                  <option value="" disabled>
                    Choose why…
                  </option>
                  {REASONS.map(([value, text]) => (
                    <option key={value} value={value}>
                      {text}
                    </option>
                  ))}
                </select>
              </label>
            </>
          )}
        </ConfirmDialog>
      )}
      {create.data?.status === "awaiting_approval" && (
        <p role="status" className="m-0 text-sm" data-testid="refund-outcome">
          Sent for approval (request {create.data.requestId}): a refund this large needs a second staff member to
          approve it under <a href="/admin/approvals">Approvals</a>. Nothing has been refunded yet.
        </p>
      )}
      {made && (
        <p role="status" className="m-0 text-sm" data-testid="refund-outcome">
          {made.replayed ? (
            <>
              Already done: this refund was made
              {done ? (
                <>
                  {" "}
                  on <Time date={done.at} showRelative={false} /> by {done.by}
                </>
              ) : null}
              . Your note was kept with it.
            </>
          ) : (
            <>Refunded: {made.refundId}.</>
          )}
        </p>
      )}
    </div>
  );
}

const ReasonBadge = ({ reason }: { reason: string | null }) => (reason ? <Badge tone="neutral">{reason}</Badge> : null);

/** What the refund does, said before it is done. */
const Effect = ({ refund, of, chargeId }: { refund: string; of: string; chargeId: string }) => (
  <>
    This gives {refund} of the {of} charge <code>{chargeId}</code> back to the customer&apos;s card, through the payment
    gateway. It cannot be undone.
  </>
);
