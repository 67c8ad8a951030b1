/**
 * FINDING (low): a path segment that is not valid percent-encoded UTF-8 is
 * answered 500 "Internal Server Error" (Next.js's plain-text page, not the
 * API's error format) on GET /api/charges/{id}: the dynamic segment is decoded
 * before the route's handleApi can answer 404/400. Nothing is stored.
 *
 * (The review also probed odd keys, bodies, headers and query strings: those
 * all got a documented 4xx; see the report.)
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { APP_URL, closeConnections, newApiClient } from "../helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("review bad input")));
after(closeConnections);

function get(path: string): Promise<{ status: number; type: string; text: string }> {
  const url = new URL(APP_URL);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: "GET", path, headers: { Authorization: `Bearer ${apiKey}` } },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, type: String(res.headers["content-type"]), text }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("a charge id that is not valid percent-encoding", () => {
  for (const path of ["/api/charges/%ff%fe", "/api/charges/%e9", "/api/charges/ch_%c3"]) {
    test(`GET ${path} is a 4xx in the API's error format`, async () => {
      const res = await get(path);
      assert.ok(res.status < 500, `${res.status} ${res.type} ${res.text.slice(0, 200)}`);
      assert.match(res.type, /json/);
    });
  }
});
