"use client";

import { setNonce } from "get-nonce";
import { NuqsAdapter } from "nuqs/adapters/next/app";
import { Tooltip } from "radix-ui";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "~/trpc/react";

/**
 * The dashboard's client-side context: tRPC + React Query, URL state (nuqs),
 * tooltips. The page's CSP nonce is handed to get-nonce, which Radix's scroll
 * lock (react-remove-scroll) uses for the one <style> element it adds. It is
 * the document's nonce (read from its scripts), not this render's: after a
 * client-side navigation into the dashboard (from sign-in), the layout is
 * rendered for a request with a nonce of its own, which the document's CSP
 * does not know, and a dialog's <style> was refused.
 */
export function Providers({ nonce, children }: { nonce: string | null; children: ReactNode }) {
  if (typeof window !== "undefined") {
    const documentNonce = document.querySelector<HTMLScriptElement>("script[nonce]")?.nonce;
    if (documentNonce || nonce) setNonce((documentNonce || nonce)!);
  }
  return (
    <TRPCReactProvider>
      <NuqsAdapter>
        <Tooltip.Provider>{children}</Tooltip.Provider>
      </NuqsAdapter>
    </TRPCReactProvider>
  );
}
