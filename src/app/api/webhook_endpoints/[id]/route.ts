import { withApiClient } from "~/server/auth/withApiClient";
import { methodNotAllowed } from "~/server/http/handleApi";
import { endpointsApi } from "~/server/webhooks/api";

export const dynamic = "force-dynamic";

type Params = { params: Promise<{ id: string }> };

export const GET = (request: Request, { params }: Params) =>
  withApiClient(request, async (client) => endpointsApi.retrieve(client.id, (await params).id));
export const POST = (request: Request, { params }: Params) =>
  withApiClient(request, async (client) => endpointsApi.update(client.id, (await params).id, request));
export const DELETE = (request: Request, { params }: Params) =>
  withApiClient(request, async (client) => endpointsApi.remove(client.id, (await params).id, request));
export const PUT = methodNotAllowed("GET, POST, DELETE");
export const PATCH = methodNotAllowed("GET, POST, DELETE");
