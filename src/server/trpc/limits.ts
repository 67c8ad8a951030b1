/** Shared by the tRPC endpoint and the dashboard's batch link (src/trpc/react.tsx). */
export const MAX_BATCH_SIZE = 10;
/** The dashboard's largest input is a few hundred bytes. */
export const MAX_BODY_BYTES = 64 * 1024;
