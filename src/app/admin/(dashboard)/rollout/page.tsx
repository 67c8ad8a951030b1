import type { Metadata } from "next";
import { Rollout } from "../_views/Rollout";

export const metadata: Metadata = { title: "Rollout" };

export default function Page() {
  return <Rollout />;
}
