import { randomBytes } from "node:crypto";

/** An event's id: stable, never reused, and what receivers deduplicate by (the webhook-id header). */
export const newEventId = () => `evt_${randomBytes(12).toString("hex")}`;

/** A DATETIME(3) literal in UTC, the same in the driver's statements and Prisma's raw ones. */
export const utcDatetime = (at: Date) => at.toISOString().slice(0, 23).replace("T", " ");
