import { withApiClient } from "~/server/auth/withApiClient";
import { listEvents } from "~/server/events/list";
import { jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";

export const dynamic = "force-dynamic";

/** GET /api/events: the client's events, newest first, paged by cursor (src/server/events/list.ts). */
export async function GET(request: Request) {
  return withApiClient(request, async (client) =>
    jsonResponse(200, await listEvents(client.id, new URL(request.url).searchParams)),
  );
}

export const POST = methodNotAllowed("GET");
export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
