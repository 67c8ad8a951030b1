"use client";

/** A secret shown once (a new API key, a first password): it is stored hashed and cannot be shown again. */
export function OneTimeSecret({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  return (
    <section className="card space-y-2 border-amber-400 bg-amber-50" role="status" aria-label={label}>
      <p className="m-0">
        <strong>{label}</strong> — copy it now; it is not stored and will not be shown again.
      </p>
      <pre
        className="overflow-x-auto rounded bg-white p-3 text-[15px] select-all"
        data-testid="one-time-secret"
        tabIndex={0}
      >
        {value}
      </pre>
      <button type="button" className="btn" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}
