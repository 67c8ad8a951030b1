"use client";

import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import type { inferRouterOutputs } from "@trpc/server";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import superjson from "superjson";
import { MAX_BATCH_SIZE } from "~/server/trpc/limits";
import type { AppRouter } from "~/server/trpc/root";

export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/**
 * The session ended (logout elsewhere, disabled, role changed, timed out): to
 * the sign-in page, which comes back to this page afterwards. Layouts are not
 * re-rendered on client-side navigation, so the dashboard layout's own check
 * would not see it.
 */
function signInAgainOnUnauthorized(error: unknown) {
  if ((error as { data?: { code?: string } }).data?.code !== "UNAUTHORIZED") return;
  // Kept in this tab's session storage, not the URL: the sign-in page stays /admin/login.
  sessionStorage.setItem(RETURN_TO_KEY, `${window.location.pathname}${window.location.search}`);
  window.location.assign("/admin/login");
}

/** Where the sign-in page sends the user back to (src/app/admin/login/page.tsx). */
export const RETURN_TO_KEY = "charges.returnTo";

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
