"use client";

import { useState } from "react";

/**
 * A secret shown once (a new API key, a first password): it is stored hashed and cannot be shown again. A copy
 * button puts it on the clipboard (and says whether that worked: a browser may refuse, then it is selected to copy
 * by hand); `children` says what else the reader must know (a rotation's grace period).
 */
export function OneTimeSecret({
  label,
  value,
  onDone,
  children,
}: {
  label: string;
  value: string;
  onDone: () => void;
  children?: React.ReactNode;
}) {
  const [copied, setCopied] = useState<"copied" | "failed" | null>(null);
  async function copy(pre: HTMLElement | null) {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("copied");
    } catch {
      if (pre) window.getSelection()?.selectAllChildren(pre);
      setCopied("failed");
    }
  }
  return (
    <section className="card space-y-2 border-amber-400 bg-amber-50" role="status" aria-label={label}>
      <p className="m-0">
        <strong>{label}</strong> — copy it now; it is not stored and will not be shown again.
      </p>
      {children}
      <pre
        className="overflow-x-auto rounded bg-white p-3 text-[15px] select-all"
        data-testid="one-time-secret"
        tabIndex={0}
      >
        {value}
      </pre>
      <div className="flex flex-wrap items-center gap-2">
        <button
          type="button"
          className="btn-secondary"
          onClick={(e) => void copy(e.currentTarget.parentElement?.previousElementSibling as HTMLElement | null)}
        >
          Copy
        </button>
        <button type="button" className="btn" onClick={onDone}>
          I have copied it
        </button>
        <span aria-live="polite" className="text-sm">
          {copied === "copied" ? "Copied to the clipboard." : copied === "failed" ? "Selected: copy it by hand." : ""}
        </span>
      </div>
    </section>
  );
}
