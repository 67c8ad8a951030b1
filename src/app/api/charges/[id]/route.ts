import { authenticateApiClient } from "~/server/auth/apiClients";
import { serializeCharge } from "~/server/charges/responses";
import { db } from "~/server/db";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi, methodNotAllowed } from "~/server/http/handleApi";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    const { id } = await params;
    const charge = await db.charge.findUnique({ where: { id } });
    // Another client's charge is indistinguishable from a missing one.
    if (!charge || charge.apiClientId !== client.id) return errorResponse("not_found", { message: `No charge ${id}.` });
    return jsonResponse(200, JSON.stringify(serializeCharge(charge)));
  });
}

export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
