import { z } from "zod";
import { chargeDetail, customerCharges, customerChargesInput, windowMinutes } from "~/server/customers/charges";
import { duplicatesInput, listPossibleDuplicates } from "~/server/customers/duplicates";
import { incident, incidentInput } from "~/server/doubleCharges/incident";
import { incidentCsv } from "~/server/doubleCharges/incidentReport";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/** Customers and their charges: "was customer X charged twice?". */
export const customersRouter = createTRPCRouter({
  charges: protectedProcedure.input(customerChargesInput).query(({ input }) => customerCharges(input)),

  charge: protectedProcedure
    .input(z.object({ id: z.string().trim().min(1).max(32), windowMinutes }))
    .query(({ input }) => chargeDetail(input.id, input.windowMinutes)),

  /** Possible duplicates across all customers, newest first. */
  duplicates: protectedProcedure.input(duplicatesInput).query(({ input }) => listPossibleDuplicates(input)),

  /** The incident view: the likely double charges of a range as a work list, the gaps, and the same as CSV. */
  incident: protectedProcedure.input(incidentInput).query(({ input }) => incident(input)),
  incidentCsv: protectedProcedure
    .input(incidentInput)
    .query(async ({ input }) => ({ csv: incidentCsv(await incident(input)) })),
});
