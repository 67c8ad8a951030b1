import type { ReactNode } from "react";

export function PageHeader({ title, children }: { title: ReactNode; children?: ReactNode }) {
  return (
    <div className="mb-4 space-y-1">
      <h1 className="break-words">{title}</h1>
      {children && <p className="muted max-w-3xl text-sm">{children}</p>}
    </div>
  );
}
