import { withApiClient } from "~/server/auth/withApiClient";
import { methodNotAllowed } from "~/server/http/handleApi";
import { endpointsApi } from "~/server/webhooks/api";

export const dynamic = "force-dynamic";

export const GET = (request: Request) => withApiClient(request, (client) => endpointsApi.list(client.id));
export const POST = (request: Request) => withApiClient(request, (client) => endpointsApi.create(client.id, request));
export const PUT = methodNotAllowed("GET, POST");
export const PATCH = methodNotAllowed("GET, POST");
export const DELETE = methodNotAllowed("GET, POST");
