import type { Metadata } from "next";
import { Account } from "../_views/Account";

export const metadata: Metadata = { title: "Account" };

export default function Page() {
  return <Account />;
}
