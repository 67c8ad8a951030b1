import { headers } from "next/headers";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata = {
  title: { template: "%s · Charges", default: "Charges" },
  description: "Idempotent payments API",
  icons: { icon: "/favicon.svg" },
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Reading the request makes every page render per request, which the CSP nonce (src/proxy.ts) needs:
  // a page built ahead of time would carry script tags without it, and the browser would refuse them.
  await headers();
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
