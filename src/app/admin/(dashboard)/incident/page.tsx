import type { Metadata } from "next";
import { Incident } from "../_views/Incident";

export const metadata: Metadata = { title: "Incident" };

export default function Page() {
  return <Incident />;
}
