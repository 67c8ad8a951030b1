import type { Metadata } from "next";
import { CustomerSearch } from "../_views/Customers";

export const metadata: Metadata = { title: "Customers" };

export default function Page() {
  return <CustomerSearch />;
}
