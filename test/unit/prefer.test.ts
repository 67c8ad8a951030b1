import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_WAIT_SECONDS, preferredWaitSeconds } from "~/server/http/prefer";

test("Prefer: wait=N is read among other preferences, capped, and ignored when unreadable", () => {
  assert.equal(preferredWaitSeconds(null), 0);
  assert.equal(preferredWaitSeconds("wait=3"), 3);
  assert.equal(preferredWaitSeconds("respond-async, wait=4"), 4);
  assert.equal(preferredWaitSeconds("return=minimal; foo=bar, WAIT = 2"), 2);
  assert.equal(preferredWaitSeconds('wait="5"'), 5);
  assert.equal(preferredWaitSeconds("wait=100"), MAX_WAIT_SECONDS);
  assert.equal(preferredWaitSeconds("wait=soon"), 0);
  assert.equal(preferredWaitSeconds("wait=-1"), 0);
  assert.equal(preferredWaitSeconds("handling=lenient"), 0);
});
