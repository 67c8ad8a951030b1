"use client";

import { RedocStandalone } from "redoc";

/**
 * Redoc (the React component of Redocly's API reference) rendering our OpenAPI
 * document. Everything it needs is bundled: no fonts, scripts or workers from
 * elsewhere (search is off, which is what would start a worker).
 */
const systemFonts = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

export function ApiReference({ spec, nonce }: { spec: object; nonce?: string }) {
  return (
    <RedocStandalone
      spec={spec}
      options={{
        nonce,
        disableSearch: true,
        hideDownloadButtons: false,
        downloadUrls: [{ title: "OpenAPI document", url: "/api/openapi.json" }],
        expandResponses: "",
        jsonSamplesExpandLevel: 3,
        theme: {
          typography: {
            fontFamily: systemFonts,
            headings: { fontFamily: systemFonts },
            code: { fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace" },
          },
        },
      }}
    />
  );
}
