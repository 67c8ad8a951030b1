import { db, poolUsage } from "~/server/db";
import { jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";

export const dynamic = "force-dynamic";

export async function GET(request: Request) {
  return handleApi(request, async () => {
    await db.$queryRaw`SELECT 1`;
    return jsonResponse(200, JSON.stringify({ status: "ok", database: "ok", pool: poolUsage }));
  });
}
