import type { Metadata } from "next";
import { Duplicates } from "../_views/Duplicates";

export const metadata: Metadata = { title: "Possible duplicates" };

export default function Page() {
  return <Duplicates />;
}
