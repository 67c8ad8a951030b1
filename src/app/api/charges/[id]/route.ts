import { serializeCharge } from "~/server/charges/responses";
import { db } from "~/server/db";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";
import { withApiClient } from "~/server/auth/withApiClient";
import { serializeRefund } from "~/server/refunds/responses";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return withApiClient(request, async (client) => {
    const { id } = await params;
    const charge = await db.charge.findUnique({
      where: { id },
      include: { refunds: { orderBy: { createdAt: "asc" } } },
    });
    // Another client's charge is indistinguishable from a missing one.
    if (!charge || charge.apiClientId !== client.id) return errorResponse("not_found", { message: `No charge ${id}.` });
    return jsonResponse(200, JSON.stringify(serializeCharge(charge, charge.refunds.map(serializeRefund))));
  });
}

export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
