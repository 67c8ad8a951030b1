import { signOut } from "~/server/auth/staffLogin";
import { refuseCrossSite } from "~/server/http/crossSite";
import { handleApi } from "~/server/http/handleApi";
import { requestInfo } from "~/server/http/requestInfo";

export const dynamic = "force-dynamic";

/** Ends the session (a plain form POST from the dashboard), then back to the sign-in page. */
export function POST(request: Request) {
  return handleApi(request, async () => {
    const refused = refuseCrossSite(request);
    if (refused) return refused;
    await signOut(requestInfo(request.headers));
    return new Response(null, { status: 303, headers: { Location: "/admin/login", "Cache-Control": "no-store" } });
  });
}
