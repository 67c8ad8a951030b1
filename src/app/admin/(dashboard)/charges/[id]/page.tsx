import type { Metadata } from "next";
import { ChargeDetail } from "../../_views/Customers";

type Props = { params: Promise<{ id: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: `Charge ${(await params).id}` };
}

export default async function Page({ params }: Props) {
  return <ChargeDetail id={(await params).id} />;
}
