import type { ApiClient } from "~/generated/prisma/client";
import { authenticateApiClient } from "./apiClients";
import { addLogContext } from "~/server/observability/context";
import { errorResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";

/** A public API handler for an API client: 401 without a valid key, and every log line names the client. */
export function withApiClient(
  request: Request,
  run: (client: ApiClient) => Promise<Response>,
  answered?: (response: Response) => void,
): Promise<Response> {
  return handleApi(
    request,
    async () => {
      const client = await authenticateApiClient(request.headers.get("authorization"));
      if (!client) return errorResponse("unauthorized");
      addLogContext({ apiClientId: client.id });
      return run(client);
    },
    answered,
  );
}
