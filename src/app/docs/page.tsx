import { headers } from "next/headers";
import { openApiDocument } from "~/server/openapi";
import { ApiReference } from "./ApiReference";

export const metadata = { title: "Charges API reference" };

/**
 * The API reference: the OpenAPI document served at /api/openapi.json, rendered.
 * Every error code's doc_url points at its entry here (#section/Errors/<code>).
 */
export default async function DocsPage() {
  // The page CSP's nonce (src/proxy.ts), for the <style> elements styled-components injects (it reads the
  // csp-nonce meta tag). /docs also allows inline styles (see pageCsp), which Redoc's bundled CSS needs.
  const nonce = (await headers()).get("x-nonce") ?? undefined;
  return (
    <>
      {/* Redoc's sidebar shows a logo from Redocly's CDN; this page loads nothing from elsewhere. */}
      <meta httpEquiv="Content-Security-Policy" content="img-src 'self' data:; font-src 'self'; connect-src 'self'" />
      <meta property="csp-nonce" content={nonce} />
      <ApiReference spec={JSON.parse(JSON.stringify(openApiDocument))} nonce={nonce} />
    </>
  );
}
