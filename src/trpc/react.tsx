"use client";

import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import superjson from "superjson";
import { MAX_BATCH_SIZE } from "~/server/trpc/limits";
import type { AppRouter } from "~/server/trpc/root";

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

/**
 * The session ended (logout elsewhere, disabled, role changed, timed out): back
 * to the sign-in page. Layouts are not re-rendered on client-side navigation,
 * so the dashboard layout's own check would not see it.
 */
function signInAgainOnUnauthorized(error: unknown) {
  if ((error as { data?: { code?: string } }).data?.code === "UNAUTHORIZED") window.location.assign("/admin/login");
}

export function TRPCReactProvider({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        queryCache: new QueryCache({ onError: signInAgainOnUnauthorized }),
        mutationCache: new MutationCache({ onError: signInAgainOnUnauthorized }),
        defaultOptions: { queries: { staleTime: 2_000, refetchOnWindowFocus: false, retry: false } },
      }),
  );
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: "/api/trpc", transformer: superjson, maxItems: MAX_BATCH_SIZE })],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
