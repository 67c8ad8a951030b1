import type { Metadata } from "next";
import { ApiClients } from "../_views/ApiClients";

export const metadata: Metadata = { title: "API clients" };

export default function Page() {
  return <ApiClients />;
}
