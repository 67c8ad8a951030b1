/** The tones of a record's phase display (src/server/requests/phaseDisplay.ts), and neutral. */
const TONES = {
  progress: "bg-sky-100 text-sky-900 ring-sky-700/30",
  warning: "bg-amber-100 text-amber-900 ring-amber-700/30",
  ok: "bg-emerald-100 text-emerald-900 ring-emerald-700/30",
  danger: "bg-red-100 text-red-900 ring-red-700/30",
  neutral: "bg-slate-100 text-slate-800 ring-slate-600/30",
} as const;
export type BadgeTone = keyof typeof TONES;

export function Badge({
  tone = "neutral",
  title,
  children,
}: {
  tone?: BadgeTone;
  title?: string;
  children: React.ReactNode;
}) {
  return (
    <span
      title={title}
      className={
        "inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium whitespace-nowrap ring-1 ring-inset " +
        TONES[tone]
      }
    >
      {children}
    </span>
  );
}

/** A record's phase, worded by the read model (the router sends phaseDisplay's answer). */
export function PhaseBadge({ phase }: { phase: { key: string; label: string; description: string; tone: BadgeTone } }) {
  return (
    <span data-phase={phase.key}>
      <Badge tone={phase.tone} title={phase.description}>
        {phase.label}
      </Badge>
    </span>
  );
}
