import { openApiDocument } from "~/server/openapi";
import { ApiReference } from "./ApiReference";

export const metadata = { title: "Charges API reference" };

/**
 * The API reference: the OpenAPI document served at /api/openapi.json, rendered.
 * Every error code's doc_url points at its entry here (#section/Errors/<code>).
 */
export default function DocsPage() {
  return (
    <>
      {/* Redoc's sidebar shows a logo from Redocly's CDN; this page loads nothing from elsewhere. */}
      <meta httpEquiv="Content-Security-Policy" content="img-src 'self' data:; font-src 'self'; connect-src 'self'" />
      <ApiReference spec={JSON.parse(JSON.stringify(openApiDocument))} />
    </>
  );
}
