import { db } from "~/server/db";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";
import { withApiClient } from "~/server/auth/withApiClient";
import { serializeRefund } from "~/server/refunds/responses";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ id: string }> }) {
  return withApiClient(request, async (client) => {
    const { id } = await params;
    const refund = await db.refund.findUnique({ where: { id } });
    // Another client's refund is indistinguishable from a missing one.
    if (!refund || refund.apiClientId !== client.id) return errorResponse("not_found", { message: `No refund ${id}.` });
    return jsonResponse(200, JSON.stringify(serializeRefund(refund)));
  });
}

export const PUT = methodNotAllowed("GET");
export const PATCH = methodNotAllowed("GET");
export const DELETE = methodNotAllowed("GET");
