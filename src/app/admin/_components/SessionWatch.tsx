"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "~/trpc/react";

/**
 * Asks every 30 s whether the session still holds, so that a tab signed out
 * elsewhere (logout, disabled, role changed, timed out) does not go on showing
 * old data without a word: an UNAUTHORIZED answer sends it to the sign-in page
 * (src/trpc/react.tsx), which brings the user back here afterwards.
 */
export function SessionWatch() {
  const trpc = useTRPC();
  useQuery(trpc.account.me.queryOptions(undefined, { refetchInterval: 30_000, refetchIntervalInBackground: true }));
  return null;
}
