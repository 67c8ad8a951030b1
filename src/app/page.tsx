import Link from "next/link";

export default function Home() {
  return (
    <main className="mx-auto max-w-2xl space-y-3 px-4 py-10">
      <h1>Charges</h1>
      <p>
        An idempotent payments API. Retrying a request with the same <code>Idempotency-Key</code> never charges twice.
      </p>
      <ul className="list-disc pl-5">
        <li>
          <code>POST /api/charges</code>: the <a href="/docs">API reference</a> (OpenAPI document at{" "}
          <a href="/api/openapi.json">/api/openapi.json</a>)
        </li>
        <li>
          <Link href="/admin">Admin dashboard</Link>
        </li>
      </ul>
    </main>
  );
}
