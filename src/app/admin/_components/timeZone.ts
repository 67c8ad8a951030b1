"use client";

import { useSyncExternalStore } from "react";

/**
 * The one time zone a dashboard screen shows its times in: the browser's (local, the default) or UTC, chosen in the
 * header and kept in this browser. Unknown on the server and while the page hydrates (null), so that the HTML the
 * server sent and the browser's first render agree, and every time is said in the chosen zone once it is known.
 */
export type ZoneChoice = "local" | "utc";
export type Zone = { choice: ZoneChoice; zone: string };

const KEY = "charges.timeZone";
const CHANGED = "charges:time-zone";

function subscribe(changed: () => void) {
  window.addEventListener("storage", changed);
  window.addEventListener(CHANGED, changed);
  return () => {
    window.removeEventListener("storage", changed);
    window.removeEventListener(CHANGED, changed);
  };
}

/** A string, so that an unchanged choice is the same snapshot. */
const snapshot = () =>
  `${window.localStorage.getItem(KEY) === "utc" ? "utc" : "local"} ${Intl.DateTimeFormat().resolvedOptions().timeZone}`;

export function useZone(): Zone | null {
  const read = useSyncExternalStore(subscribe, snapshot, () => null);
  if (read === null) return null;
  const [choice, browser] = read.split(" ") as [ZoneChoice, string];
  return { choice, zone: choice === "utc" ? "UTC" : browser };
}

/** The browser's own zone (null on the server), for saying what "local" is. */
export function useBrowserZone(): string | null {
  return useSyncExternalStore(
    subscribe,
    () => Intl.DateTimeFormat().resolvedOptions().timeZone,
    () => null,
  );
}

export function chooseZone(choice: ZoneChoice) {
  window.localStorage.setItem(KEY, choice);
  window.dispatchEvent(new Event(CHANGED));
}
