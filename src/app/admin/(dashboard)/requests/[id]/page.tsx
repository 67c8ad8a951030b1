import type { Metadata } from "next";
import { RequestDetail } from "../../_views/RequestDetail";

type Props = { params: Promise<{ id: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  return { title: `Request #${(await params).id}` };
}

export default async function Page({ params }: Props) {
  return <RequestDetail id={(await params).id} />;
}
