import type { Metadata } from "next";
import { RequestLog } from "./_views/RequestLog";

export const metadata: Metadata = { title: "Request log" };

export default function Page() {
  return <RequestLog />;
}
