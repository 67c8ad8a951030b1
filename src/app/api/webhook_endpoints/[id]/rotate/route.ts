import { withApiClient } from "~/server/auth/withApiClient";
import { methodNotAllowed } from "~/server/http/handleApi";
import { endpointsApi } from "~/server/webhooks/api";

export const dynamic = "force-dynamic";

/** A new signing secret, shown once; the previous one signs too for the overlap (docs/webhooks.md). */
export const POST = (request: Request, { params }: { params: Promise<{ id: string }> }) =>
  withApiClient(request, async (client) => endpointsApi.rotate(client.id, (await params).id, request));
export const GET = methodNotAllowed("POST");
export const PUT = methodNotAllowed("POST");
export const PATCH = methodNotAllowed("POST");
export const DELETE = methodNotAllowed("POST");
