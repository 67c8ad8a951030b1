import type { Metadata } from "next";
import { Reuses } from "../_views/Reuses";

export const metadata: Metadata = { title: "Key reuses" };

export default function Page() {
  return <Reuses />;
}
