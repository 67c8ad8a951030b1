import type { Metadata } from "next";
import { Staff } from "../_views/Staff";

export const metadata: Metadata = { title: "Staff" };

export default function Page() {
  return <Staff />;
}
