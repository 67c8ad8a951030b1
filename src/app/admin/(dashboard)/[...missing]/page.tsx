import type { Metadata } from "next";
import { notFound } from "next/navigation";

export const metadata: Metadata = { title: "Page not found" };

/** Any other address under /admin: the dashboard's own 404 (not-found.tsx), inside its layout and navigation. */
export default function Page() {
  notFound();
}
