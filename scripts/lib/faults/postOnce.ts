/**
 * One attempt of a money POST, no retry (a keyless request, or another body under a used key): what the client
 * saw, or why it saw nothing. A status whose body the timeout cut off is no answer: the client cannot tell what
 * it says.
 */
export async function postOnce<Json>(
  url: URL,
  { apiKey, key, body, timeoutMs }: { apiKey: string; key: string | null; body: unknown; timeoutMs: number },
): Promise<{ status: number; replayed: boolean; json: Json } | { problem: string }> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${apiKey}`,
        "Content-Type": "application/json",
        ...(key === null ? {} : { "Idempotency-Key": key }),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = (await res.json().catch(() => undefined)) as Json | undefined;
    if (json === undefined) return { problem: "body lost" };
    return { status: res.status, replayed: res.headers.get("idempotent-replay") === "true", json };
  } catch (error) {
    return { problem: (error as Error).name };
  }
}
