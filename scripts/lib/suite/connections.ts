/**
 * Lanes share one MariaDB: a full test stack (app and dispatcher pools, test runner, gateway, the tests' own
 * instances and CLIs) holds 60-75 connections and more while a test starts servers of its own; a fresh server
 * allows 151. Before the lanes start, the suite makes room for them (SET GLOBAL max_connections, when the admin user
 * may) or runs fewer at once.
 */
import * as mariadb from "mariadb";
import { connectionOptions } from "../mariadbServer";

/** Measured: five lanes under a CPU hog used 322 at once, the whole 321 allowed when this was 60. */
export const CONNECTIONS_PER_LANE = 100;
/** Kept free for whatever else uses the server (other clients, a developer's shell). */
const RESERVE = 20;

/** The max_connections that lets `lanes` lanes run beside the connections already open. */
export const connectionsNeeded = (lanes: number, open: number) => open + RESERVE + lanes * CONNECTIONS_PER_LANE;

/** How many lanes (at least one) fit under `max` beside `open` connections. */
export const lanesThatFit = (wanted: number, max: number, open: number) =>
  Math.max(1, Math.min(wanted, Math.floor((max - open - RESERVE) / CONNECTIONS_PER_LANE)));

/** The number of lanes to run at once, and what was done to allow it (for the log). */
export async function makeRoomForLanes(adminUrl: string, wanted: number): Promise<{ lanes: number; note: string }> {
  const conn = await mariadb.createConnection(connectionOptions(adminUrl));
  try {
    const [{ max }] = await conn.query("SELECT @@GLOBAL.max_connections AS max");
    const [{ Value: open }] = await conn.query("SHOW GLOBAL STATUS LIKE 'Threads_connected'");
    const [maxNow, openNow] = [Number(max), Number(open)];
    const needed = connectionsNeeded(wanted, openNow);
    if (needed <= maxNow) return { lanes: wanted, note: `max_connections ${maxNow}, ${openNow} open` };
    try {
      await conn.query(`SET GLOBAL max_connections = ${needed}`);
      return { lanes: wanted, note: `raised max_connections ${maxNow} -> ${needed} (${openNow} open)` };
    } catch (error) {
      const lanes = lanesThatFit(wanted, maxNow, openNow);
      const why = (error as Error).message.split("\n")[0];
      return { lanes, note: `max_connections ${maxNow}, ${openNow} open, cannot raise it (${why}): ${lanes} at once` };
    }
  } finally {
    await conn.end();
  }
}
