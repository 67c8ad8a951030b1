import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { readBodyBytes } from "~/server/http/readJsonBody";
import { receiveGatewayEvent } from "~/server/gatewayEvents/receive";
import { takesGatewayEvents, verifyGatewayEvent } from "~/server/gateway";

export const dynamic = "force-dynamic";

/** Stripe's events carry one object; far below this. */
const MAX_EVENT_BYTES = 512 * 1024;

/**
 * POST /api/gateway/events: the payment gateway's webhook (Stripe's events, or the simulator's in their shape).
 * 2xx tells the gateway to stop sending this event; anything else makes it send again later.
 */
export async function POST(request: Request) {
  return handleApi(request, async () => {
    if (!takesGatewayEvents()) return errorResponse("not_found");
    const payload = await readBodyBytes(request, MAX_EVENT_BYTES);
    const event = verifyGatewayEvent(payload, request.headers.get("stripe-signature"));
    if (!event) return errorResponse("invalid_signature");
    const receipt = await receiveGatewayEvent(event);
    if (receipt === "in_flight" || receipt === "not_yet_known") {
      return errorResponse("service_unavailable", {
        message: "The operation this event names is not final yet; send the event again.",
      });
    }
    return jsonResponse(200, JSON.stringify({ received: true, outcome: receipt }));
  });
}
