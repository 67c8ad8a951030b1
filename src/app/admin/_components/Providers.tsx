"use client";

import { setNonce } from "get-nonce";
import { NuqsAdapter } from "nuqs/adapters/next/app";
import { Tooltip } from "radix-ui";
import type { ReactNode } from "react";
import { TRPCReactProvider } from "~/trpc/react";

/**
 * The dashboard's client-side context: tRPC + React Query, URL state (nuqs),
 * tooltips. The page's CSP nonce is handed to get-nonce, which Radix's scroll
 * lock (react-remove-scroll) uses for the one <style> element it adds.
 */
export function Providers({ nonce, children }: { nonce: string | null; children: ReactNode }) {
  if (nonce && typeof window !== "undefined") setNonce(nonce);
  return (
    <TRPCReactProvider>
      <NuqsAdapter>
        <Tooltip.Provider>{children}</Tooltip.Provider>
      </NuqsAdapter>
    </TRPCReactProvider>
  );
}
