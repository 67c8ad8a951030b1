"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type ReactNode } from "react";
import { useTRPC } from "~/trpc/react";
import { userMessage } from "../../_components/errorMessage";
import { formatMoney } from "../../_components/format";
import { Badge } from "../../_components/ui/Badge";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";

const REASONS = [
  ["duplicate", "Duplicate: the customer was charged twice"],
  ["requested_by_customer", "Requested by the customer"],
  ["fraudulent", "Fraudulent"],
] as const;

type Reason = (typeof REASONS)[number][0];

/**
 * A charge's refunds, and the button that refunds it (support and engineers). The refund is the API's idempotent
 * operation under a key made from what this page showed (server: refunds/fromDashboard.ts), so a double click,
 * a retry or a second tab showing the same charge refund it once. `evidence` says why this charge is suspect.
 */
export function ChargeRefunds({ chargeId, evidence }: { chargeId: string; evidence?: ReactNode }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const query = useQuery(trpc.refunds.ofCharge.queryOptions({ chargeId }));
  const [reason, setReason] = useState<Reason>("duplicate");
  const [amount, setAmount] = useState("");
  const done = () => {
    setAmount(""); // the next refund is a new intention, of what is left by default
    return queryClient.invalidateQueries();
  };
  const create = useMutation(trpc.refunds.create.mutationOptions({ onSuccess: done }));
  return (
    <QueryState query={query} what="the refunds">
      {({ charge, refunds }) => {
        if (!charge) return null;
        const left = charge.amountCents - charge.amountRefundedCents - charge.refundHeldCents;
        const money = (cents: number) => formatMoney(cents, charge.currency);
        const partial = amount.trim() === "" ? undefined : Math.round(Number(amount) * 100);
        const amountProblem =
          partial !== undefined && !(Number.isInteger(partial) && partial >= 1 && partial <= left)
            ? `Enter an amount between ${money(1)} and ${money(left)}.`
            : null;
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
            {refunds.length === 0 ? (
              <p className="m-0 muted">No refund yet.</p>
            ) : (
              <ul className="m-0 space-y-1" data-testid="refund-list">
                {refunds.map((r) => (
                  <li key={r.id} data-refund={r.id}>
                    <code>{r.id}</code> {money(r.amountCents)} <ReasonBadge reason={r.reason} />{" "}
                    <Time date={r.createdAt} />
                    {r.requestId && (
                      <>
                        {" · "}
                        <Link href={`/admin/requests/${r.requestId}`}>its request</Link>
                      </>
                    )}
                  </li>
                ))}
              </ul>
            )}
            {charge.status === "succeeded" && left > 0 ? (
              <ConfirmDialog
                trigger={
                  <button type="button" className="btn" data-testid="refund-button">
                    Refund…
                  </button>
                }
                title={`Refund charge ${chargeId}`}
                confirmLabel={`Refund ${money(partial ?? left)}`}
                pending={create.isPending}
                error={amountProblem ?? (create.error ? userMessage(create.error) : null)}
                onConfirm={(note) =>
                  amountProblem
                    ? Promise.reject(new Error(amountProblem))
                    : create.mutateAsync({
                        chargeId,
                        seenRefundedCents: charge.amountRefundedCents,
                        amountCents: partial,
                        reason,
                        note,
                      })
                }
              >
                <p className="m-0">
                  <Effect refund={money(partial ?? left)} of={money(charge.amountCents)} chargeId={chargeId} />
                  {charge.amountRefundedCents > 0 && ` ${money(charge.amountRefundedCents)} was refunded already.`}
                </p>
                {evidence && <div data-testid="refund-evidence">{evidence}</div>}
                <label className="field">
                  Amount ({charge.currency.toUpperCase()}; empty: all that is left, {money(left)})
                  <input
                    className="input"
                    inputMode="decimal"
                    value={amount}
                    onChange={(e) => setAmount(e.target.value)}
                    placeholder={(left / 100).toFixed(2)}
                    aria-describedby="refund-amount-help"
                  />
                </label>
                <span id="refund-amount-help" className="text-xs muted">
                  For a partial refund, enter less.
                </span>
                <label className="field">
                  Reason for the gateway
                  <select className="input" value={reason} onChange={(e) => setReason(e.target.value as Reason)}>
                    {REASONS.map(([value, label]) => (
                      <option key={value} value={value}>
                        {label}
                      </option>
                    ))}
                  </select>
                </label>
              </ConfirmDialog>
            ) : (
              <p className="m-0 text-sm muted">
                {charge.status === "succeeded" ? "Nothing is left to refund." : "A declined charge moved no money."}
              </p>
            )}
          </section>
        );
      }}
    </QueryState>
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
