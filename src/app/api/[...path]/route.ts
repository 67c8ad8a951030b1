import { errorResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";

// Unknown API paths answer in the API's error format, not with an HTML page.
function notFound(request: Request) {
  return handleApi(request, async () =>
    errorResponse("not_found", { message: `No endpoint ${request.method} ${new URL(request.url).pathname}.` }),
  );
}

export { notFound as GET, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE };
