import type { Metadata } from "next";
import { CustomerView } from "../../_views/Customers";

type Props = { params: Promise<{ customerId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: `Customer ${decodeURIComponent((await params).customerId)}` };
}

export default async function Page({ params }: Props) {
  return <CustomerView customerId={decodeURIComponent((await params).customerId)} />;
}
