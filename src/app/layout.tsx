import type { ReactNode } from "react";
import "./globals.css";

export const metadata = { title: "Charges", description: "Idempotent payments API" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
