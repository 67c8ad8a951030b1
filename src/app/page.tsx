import Link from "next/link";

export default function Home() {
  return (
    <main className="page narrow">
      <h1>Charges</h1>
      <p>An idempotent payments API. Retrying a request with the same <code>Idempotency-Key</code> never charges twice.</p>
      <ul>
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
