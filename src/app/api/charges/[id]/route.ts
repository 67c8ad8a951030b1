import { authenticateApiClient } from "~/server/auth/apiClients";
import { serializeCharge } from "~/server/charges/responses";
import { db } from "~/server/db";
import { errorResponse, jsonResponse, methodNotAllowed } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return handleApi(async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse(401, "unauthorized", "Send a valid API key as `Authorization: Bearer <key>`.");
    const { id } = await params;
    const charge = await db.charge.findUnique({ where: { id } });
    // Another client's charge is indistinguishable from a missing one.
    if (!charge || charge.apiClientId !== client.id) return errorResponse(404, "not_found", `No charge ${id}.`);
    return jsonResponse(200, JSON.stringify(serializeCharge(charge)));
  });
}

export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
