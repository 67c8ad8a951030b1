import Link from "next/link";
import { PageHeader } from "../_components/ui/PageHeader";

/** A 404 inside the dashboard keeps its navigation, so the reader can go on from here. */
export default function NotFound() {
  return (
    <>
      <PageHeader title="Page not found">There is no dashboard page at this address.</PageHeader>
      <p className="card" data-testid="not-found">
        Use the navigation above, or go to the <Link href="/admin">request log</Link>. A request, charge or customer can
        be found by pasting its key or id into the request log&apos;s search.
      </p>
    </>
  );
}
