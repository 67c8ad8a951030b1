import { z } from "zod";

/** A request record's id as text (a BIGINT in decimal): the one rule for it, wherever one arrives. */
const RECORD_ID = /^\d{1,19}$/;

export const recordIdSchema = z.string().regex(RECORD_ID, "must be a record id");

/** The id, or null when the text is not one. */
export const parseRecordId = (text: string | null | undefined): bigint | null =>
  text && RECORD_ID.test(text) ? BigInt(text) : null;
