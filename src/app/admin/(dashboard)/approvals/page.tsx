import type { Metadata } from "next";
import { Approvals } from "../_views/Approvals";

export const metadata: Metadata = { title: "Approvals" };

export default function Page() {
  return <Approvals />;
}
