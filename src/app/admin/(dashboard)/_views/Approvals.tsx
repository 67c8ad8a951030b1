"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { userMessage } from "../../_components/errorMessage";
import { formatMoney } from "../../_components/format";
import { ConfirmDialog } from "../../_components/ui/ConfirmDialog";
import { PageHeader } from "../../_components/ui/PageHeader";
import { QueryState } from "../../_components/ui/QueryState";
import { Time } from "../../_components/ui/Time";
import { useTRPC } from "~/trpc/react";

/** The refund controls in force, and how much of this person's limits is used (refunds/staffIntentions.ts). */
export function RefundLimits() {
  const trpc = useTRPC();
  const controls = useQuery(trpc.refunds.controls.queryOptions());
  const c = controls.data;
  if (!c) return null;
  const cents = (n: number) => (n / 100).toFixed(2);
  return (
    <p className="m-0 text-sm muted" data-testid="refund-limits">
      Your refunds: {c.usage.hour.count} of {c.perHour.count} this hour ({cents(c.usage.hour.cents)} of{" "}
      {cents(c.perHour.cents)}), {c.usage.day.count} of {c.perDay.count} in 24 hours ({cents(c.usage.day.cents)} of{" "}
      {cents(c.perDay.cents)}). Above {cents(c.approvalAboveCents)} a second person approves.
      {c.requireSecondFactor && !c.secondFactorPassed && (
        <>
          {" "}
          <strong className="bad">
            Refunds need two-factor sign-in: <Link href="/admin/account">set it up under Account</Link>.
          </strong>
        </>
      )}
    </p>
  );
}

/** Refund requests above the threshold, for a second person to approve or reject (never their own). */
export function Approvals() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const pending = useQuery({ ...trpc.refunds.awaitingApproval.queryOptions(), refetchInterval: 5_000 });
  const controls = useQuery(trpc.refunds.controls.queryOptions());
  const refresh = () => queryClient.invalidateQueries();
  const approve = useMutation(trpc.refunds.approve.mutationOptions({ onSettled: refresh }));
  const reject = useMutation(trpc.refunds.reject.mutationOptions({ onSettled: refresh }));
  return (
    <>
      <PageHeader title="Approvals" />
      <RefundLimits />
      {approve.data?.status === "refunded" && (
        <p role="status" className="card good" data-testid="approval-outcome">
          Approved and refunded: {approve.data.refundId}.
        </p>
      )}
      <QueryState
        query={pending}
        what="the refunds awaiting approval"
        isEmpty={(rows) => rows.length === 0}
        empty="No refund is waiting for an approval."
      >
        {(rows) => (
          <ul className="m-0 list-none space-y-2 p-0" aria-label="Refunds awaiting approval">
            {rows.map((row) => {
              const own = row.requestedByStaffId === controls.data?.me;
              const amount = formatMoney(row.amountCents, row.currency);
              return (
                <li key={row.id} className="card space-y-1" data-testid="approval-request">
                  <p className="m-0">
                    <strong>{amount}</strong> of <Link href={`/admin/charges/${row.chargeId}`}>{row.chargeId}</Link> (
                    {row.reason}), asked by {row.requestedByLabel} <Time date={row.createdAt} />
                  </p>
                  <p className="m-0 text-sm">“{row.note}”</p>
                  {own ? (
                    <p className="m-0 text-sm muted">Your own request: another staff member decides.</p>
                  ) : (
                    <div className="flex flex-wrap gap-2">
                      <ConfirmDialog
                        trigger={
                          <button type="button" className="btn">
                            Approve {amount}
                          </button>
                        }
                        title={`Approve the refund of ${amount}?`}
                        confirmLabel="Approve and refund"
                        askReason={false}
                        onConfirm={() => approve.mutateAsync({ id: row.id })}
                        pending={approve.isPending}
                        error={approve.error ? userMessage(approve.error) : null}
                      >
                        <p>
                          This gives {amount} of the charge <code>{row.chargeId}</code> back to the customer&apos;s
                          card, as {row.requestedByLabel} asked. It cannot be undone.
                        </p>
                      </ConfirmDialog>
                      <ConfirmDialog
                        trigger={
                          <button type="button" className="btn-secondary">
                            Reject
                          </button>
                        }
                        title={`Reject the refund of ${amount}?`}
                        confirmLabel="Reject"
                        reasonLabel="Why (the requester and the audit log see it)"
                        onConfirm={(note) => reject.mutateAsync({ id: row.id, note })}
                        pending={reject.isPending}
                        error={reject.error ? userMessage(reject.error) : null}
                      >
                        <p>Nothing is refunded, now or later, for this request.</p>
                      </ConfirmDialog>
                    </div>
                  )}
                </li>
              );
            })}
          </ul>
        )}
      </QueryState>
    </>
  );
}
