import { z } from "zod";
import { EVENT_TYPES } from "~/server/events/types";
import { createTRPCRouter, engineerProcedure, protectedProcedure } from "~/server/trpc/trpc";
import {
  attemptsOfDelivery,
  deliveriesOfEndpoint,
  deliveriesOfEvent,
  eventsWhere,
  sendAgain,
  sendTestEvent,
} from "~/server/webhooks/deliveries";
import {
  createEndpoint,
  deleteEndpoint,
  listEndpoints,
  rotateSecret,
  serializeEndpoint,
  updateEndpoint,
} from "~/server/webhooks/endpoints";

const endpointId = z.object({ id: z.string().regex(/^we_[0-9a-f]{24}$/) });
const deliveryId = z.object({ deliveryId: z.string().regex(/^\d{1,19}$/) });

/**
 * Webhooks in the dashboard: engineers manage every client's endpoints (the same operations as the API and the
 * CLI, audited as the engineer) and see each delivery, its attempts and answers, the next retry; "send again" and
 * a test event. Support and engineers see the events of a charge and of a request, each with its deliveries.
 */
export const webhooksRouter = createTRPCRouter({
  endpoints: engineerProcedure.query(async ({ ctx }) => {
    const [endpoints, clients] = await Promise.all([
      listEndpoints(null),
      ctx.db.apiClient.findMany({ select: { id: true, name: true } }),
    ]);
    const names = new Map(clients.map((c) => [c.id, c.name]));
    return endpoints.map((e) => ({
      ...serializeEndpoint(e),
      apiClientId: e.apiClientId,
      clientName: names.get(e.apiClientId) ?? `#${e.apiClientId}`,
    }));
  }),

  eventTypes: engineerProcedure.query(() => ["*", ...EVENT_TYPES.filter((t) => t !== "webhook.test")]),

  create: engineerProcedure
    .input(
      z.object({
        apiClientId: z.number().int().positive(),
        url: z.string().trim().min(1).max(2048),
        eventTypes: z.array(z.string()).min(1),
        description: z.string().max(255).nullish(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const { endpoint, secret } = await createEndpoint(input.apiClientId, input, ctx.audit);
      return { id: endpoint.id, secret };
    }),

  rotate: engineerProcedure
    .input(
      endpointId.extend({
        overlapHours: z
          .number()
          .min(0)
          .max(24 * 7),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const { endpoint, secret } = await rotateSecret(null, input.id, ctx.audit, input.overlapHours * 3_600_000);
      return { id: endpoint.id, secret, previousUntil: endpoint.previousSecretUntil };
    }),

  setEnabled: engineerProcedure.input(endpointId.extend({ enabled: z.boolean() })).mutation(async ({ ctx, input }) => {
    await updateEndpoint(null, input.id, { enabled: input.enabled }, ctx.audit);
  }),

  remove: engineerProcedure.input(endpointId).mutation(async ({ ctx, input }) => {
    await deleteEndpoint(null, input.id, ctx.audit);
  }),

  sendTest: engineerProcedure
    .input(endpointId)
    .mutation(async ({ ctx, input }) => ({ eventId: await sendTestEvent(input.id, ctx.audit) })),

  deliveries: engineerProcedure.input(endpointId).query(({ input }) => deliveriesOfEndpoint(input.id)),

  attempts: engineerProcedure.input(deliveryId).query(({ input }) => attemptsOfDelivery(BigInt(input.deliveryId))),

  sendAgain: engineerProcedure.input(deliveryId).mutation(async ({ ctx, input }) => {
    await sendAgain(BigInt(input.deliveryId), ctx.audit);
  }),

  /** The events of a charge (its refunds' too) or of a request record, each with its deliveries. */
  eventsOf: protectedProcedure
    .input(
      z.union([z.object({ chargeId: z.string().max(32) }), z.object({ requestId: z.string().regex(/^\d{1,19}$/) })]),
    )
    .query(async ({ input }) => {
      const where = "chargeId" in input ? { chargeId: input.chargeId } : { requestId: BigInt(input.requestId) };
      const events = await eventsWhere(where);
      return Promise.all(
        events.map(async (e) => ({
          id: e.id,
          type: e.type,
          createdAt: e.createdAt,
          deliveries: (await deliveriesOfEvent(e.id)).map((d) => ({
            id: d.id,
            url: d.url,
            state: d.state,
            attempts: d.attempts,
            lastStatus: d.lastStatus,
            nextAttemptAt: d.nextAttemptAt,
          })),
        })),
      );
    }),
});
