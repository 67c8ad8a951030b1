"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

const LINKS = [
  { href: "/admin", label: "Requests", match: (p: string) => p === "/admin" || p.startsWith("/admin/requests") },
  {
    href: "/admin/customers",
    label: "Customers",
    match: (p: string) => p.startsWith("/admin/customers") || p.startsWith("/admin/charges"),
  },
  { href: "/admin/duplicates", label: "Duplicates", match: (p: string) => p.startsWith("/admin/duplicates") },
  { href: "/admin/incident", label: "Incident", match: (p: string) => p.startsWith("/admin/incident") },
  { href: "/admin/approvals", label: "Approvals", match: (p: string) => p.startsWith("/admin/approvals") },
  { href: "/admin/reuses", label: "Key reuses", match: (p: string) => p.startsWith("/admin/reuses") },
  { href: "/admin/rollout", label: "Rollout", match: (p: string) => p.startsWith("/admin/rollout") },
  { href: "/admin/ledger", label: "Ledger", match: (p: string) => p.startsWith("/admin/ledger") },
];
const ENGINEER_LINKS = [
  { href: "/admin/clients", label: "API clients" },
  { href: "/admin/webhooks", label: "Webhooks" },
  { href: "/admin/staff", label: "Staff" },
  { href: "/admin/audit", label: "Audit log" },
];

export function Nav({ engineer }: { engineer: boolean }) {
  const path = usePathname();
  const links = [
    ...LINKS,
    ...(engineer ? ENGINEER_LINKS.map((l) => ({ ...l, match: (p: string) => p.startsWith(l.href) })) : []),
    { href: "/admin/account", label: "Account", match: (p: string) => p.startsWith("/admin/account") },
  ];
  return (
    <nav aria-label="Dashboard" className="flex flex-wrap items-center gap-x-1 gap-y-1">
      {links.map((link) => {
        const current = link.match(path);
        return (
          <Link
            key={link.href}
            href={link.href}
            aria-current={current ? "page" : undefined}
            className={`rounded px-2 py-1 text-sm font-medium no-underline hover:bg-slate-100 hover:no-underline ${
              current ? "bg-indigo-50 text-accent-strong" : "text-slate-800"
            }`}
          >
            {link.label}
          </Link>
        );
      })}
    </nav>
  );
}
