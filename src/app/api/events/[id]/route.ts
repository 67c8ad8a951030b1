import { withApiClient } from "~/server/auth/withApiClient";
import { findEvent } from "~/server/events/list";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return withApiClient(request, async (client) => {
    const { id } = await params;
    const event = await findEvent(client.id, id);
    // Another client's event is indistinguishable from a missing one.
    if (!event) return errorResponse("not_found", { message: `No event ${id}.` });
    return jsonResponse(200, JSON.stringify(event));
  });
}

export const POST = methodNotAllowed("GET");
export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
