import type { Metadata } from "next";
import { Webhooks } from "../_views/Webhooks";

export const metadata: Metadata = { title: "Webhooks" };

export default function Page() {
  return <Webhooks />;
}
