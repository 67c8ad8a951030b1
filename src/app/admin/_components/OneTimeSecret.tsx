"use client";

/** A secret shown once (a new API key, a first password): it is stored hashed and cannot be shown again. */
export function OneTimeSecret({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  return (
    <section className="card secret" role="status" aria-label={label}>
      <p>
        <strong>{label}</strong> — copy it now; it is not stored and will not be shown again.
      </p>
      <pre data-testid="one-time-secret">{value}</pre>
      <button onClick={onDone}>I have copied it</button>
    </section>
  );
}
