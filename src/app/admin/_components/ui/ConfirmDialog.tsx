"use client";

import { Dialog } from "radix-ui";
import { useRef, useState, type ReactNode } from "react";

/**
 * A confirmation that shows what will happen and, unless `askReason` is false,
 * asks why (the reason goes to the audit log). Nothing changes until its
 * button is pressed: the guard of every privilege, access and mode change.
 * Radix Dialog: focus trapped inside, Escape closes, the trigger gets focus back. It opens on its first field,
 * not on the first focusable thing (a time in the text would open its tooltip over the words).
 */
export function ConfirmDialog({
  trigger,
  title,
  children,
  confirmLabel,
  onConfirm,
  pending,
  error,
  askReason = true,
  reasonLabel = "Reason (kept in the audit log)",
  ready = true,
  onOpenChange,
}: {
  trigger: ReactNode;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: (reason: string) => Promise<unknown>;
  pending: boolean;
  error: string | null;
  askReason?: boolean;
  reasonLabel?: string;
  /** Whether the choices in `children` allow confirming yet. */
  ready?: boolean;
  onOpenChange?: (open: boolean) => void;
}) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const content = useRef<HTMLDivElement>(null);
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        setOpen(next);
        if (!next) setReason("");
        onOpenChange?.(next);
      }}
    >
      <Dialog.Trigger asChild>{trigger}</Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="fixed inset-0 bg-slate-900/50" />
        <Dialog.Content
          ref={content}
          onOpenAutoFocus={(e) => {
            const first = content.current?.querySelector<HTMLElement>("input, select, textarea");
            if (first) {
              e.preventDefault();
              first.focus();
            }
          }}
          className={
            "fixed top-1/2 left-1/2 max-h-[90vh] w-[min(36rem,calc(100vw-2rem))] -translate-x-1/2 -translate-y-1/2 " +
            "overflow-y-auto rounded-lg bg-white p-5 shadow-xl"
          }
        >
          <Dialog.Title className="text-lg font-semibold">{title}</Dialog.Title>
          <Dialog.Description asChild>
            <div className="mt-2 space-y-2 text-sm">{children}</div>
          </Dialog.Description>
          <form
            className="mt-4 grid gap-3"
            onSubmit={async (e) => {
              e.preventDefault();
              await onConfirm(reason.trim()).then(
                () => {
                  setOpen(false);
                  onOpenChange?.(false);
                },
                () => {},
              );
            }}
          >
            {askReason && (
              <label className="field">
                {reasonLabel}
                <textarea
                  className="input min-h-20"
                  value={reason}
                  onChange={(e) => setReason(e.target.value)}
                  required
                  minLength={3}
                  maxLength={500}
                />
              </label>
            )}
            {error && (
              <p role="alert" className="bad">
                {error}
              </p>
            )}
            <div className="flex flex-wrap justify-end gap-2">
              <Dialog.Close asChild>
                <button type="button" className="btn-secondary">
                  Cancel
                </button>
              </Dialog.Close>
              <button
                type="submit"
                className="btn"
                disabled={pending || !ready || (askReason && reason.trim().length < 3)}
              >
                {confirmLabel}
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
