import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { abandonedBody, traceOfAbandoned } from "~/server/http/abandonedAnswer";
import { errorBody } from "~/server/http/apiError";
import { PHASE_DISPLAY, phaseDisplay } from "~/server/requests/phaseDisplay";

const abandonedPhase = (body: string) =>
  ({ name: "complete", finishedBy: "abandoned", response: { status: 500, body } }) as const;

describe("the request_abandoned answer", () => {
  test("says the gateway refused the charge when it did, and never that the request did not reach it", () => {
    const body = abandonedBody({ kind: "refused", code: "request_expired" });
    const { error } = JSON.parse(body);
    assert.equal(error.code, "request_abandoned");
    assert.equal(error.gateway, "refused");
    assert.equal(error.gateway_code, "request_expired");
    assert.match(error.message, /received the charge and refused it/);
    assert.doesNotMatch(error.message, /never|before it reached/);
    assert.deepEqual(traceOfAbandoned(body), { kind: "refused", code: "request_expired" });
  });

  test("says the gateway has no trace of it when it has none", () => {
    const body = abandonedBody({ kind: "no_trace" });
    const { error } = JSON.parse(body);
    assert.equal(error.gateway, "no_trace");
    assert.match(error.message, /no trace/);
    assert.deepEqual(traceOfAbandoned(body), { kind: "no_trace" });
  });

  test("the dashboard's phase follows the stored answer; an older answer keeps the plain words", () => {
    const refused = phaseDisplay(abandonedPhase(abandonedBody({ kind: "refused", code: "request_expired" })));
    assert.equal(refused.label, PHASE_DISPLAY.abandoned.label);
    assert.match(refused.description, /refused it \(request_expired\)/);
    assert.match(phaseDisplay(abandonedPhase(abandonedBody({ kind: "no_trace" }))).description, /no trace/);
    const older = errorBody("request_abandoned", "The request was interrupted; no charge was made.");
    assert.equal(traceOfAbandoned(older), undefined);
    assert.equal(phaseDisplay(abandonedPhase(older)).description, PHASE_DISPLAY.abandoned.description);
    assert.equal(traceOfAbandoned("not json"), undefined);
  });
});
