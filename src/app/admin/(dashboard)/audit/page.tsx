import type { Metadata } from "next";
import { AuditLog } from "../_views/AuditLog";

export const metadata: Metadata = { title: "Audit log" };

export default function Page() {
  return <AuditLog />;
}
