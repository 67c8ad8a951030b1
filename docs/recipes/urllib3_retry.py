"""Charges with Python requests and urllib3's Retry, configured for this API (docs/retries.md).

One Idempotency-Key per operation, made once and sent on every attempt: urllib3 resends the same request, headers
included, so a timeout or a 409 is retried safely. Retried: connection and read errors, 409 (in flight, retry
later) and 503 (the gateway or the service could not tell), after Retry-After. Not retried: every final answer,
including the one final 500 (a replayed request_abandoned); read `error.retryable` in the body to tell a 500
internal_error (retry later with the same key) from it. The test suite runs this file against the real server
(test/retryClients.test.ts): `python3 urllib3_retry.py` with CHARGES_* in the environment prints what it got.
"""
import json
import os
import time
import uuid

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


def session_with_retries(api_key: str) -> requests.Session:
    retry = Retry(
        total=None,  # the limits below decide
        connect=5,
        read=5,  # a read timeout: the request may have been carried out; the same key makes resending safe
        status=60,  # 409/503 answers: about two minutes at Retry-After: 2
        allowed_methods=frozenset({"GET", "POST"}),  # POST is safe to retry here: it carries its key
        status_forcelist=(409, 503),  # only "retry later"; every final answer returns at once
        respect_retry_after_header=True,
        backoff_factor=0.5,
        raise_on_status=False,  # out of retries: the last answer, with its body, not an exception without it
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["Authorization"] = f"Bearer {api_key}"
    return session


def create(session: requests.Session, base_url: str, path: str, body: dict, key: str, read_timeout: float):
    """One operation: its key made by the caller once, sent on every attempt urllib3 makes."""
    return session.post(f"{base_url}{path}", json=body, headers={"Idempotency-Key": key}, timeout=(5, read_timeout))


if __name__ == "__main__":
    env = os.environ
    session = session_with_retries(env["CHARGES_API_KEY"])
    key = env.get("CHARGES_IDEMPOTENCY_KEY") or str(uuid.uuid4())
    started = time.monotonic()
    answer = create(
        session,
        env["CHARGES_URL"],
        env["CHARGES_PATH"],
        json.loads(env["CHARGES_BODY"]),
        key,
        float(env.get("CHARGES_READ_TIMEOUT", "10")),
    )
    print(json.dumps({
        "status": answer.status_code,
        "body": answer.json(),
        "replayed": answer.headers.get("Idempotent-Replay") == "true",
        "attempts": len(answer.raw.retries.history) + 1 if answer.raw.retries else 1,
        "seconds": round(time.monotonic() - started, 3),
        "key": key,
    }))
