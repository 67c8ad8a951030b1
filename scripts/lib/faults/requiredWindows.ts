/**
 * The `require_header` fault's bookkeeping: while the header is required of a client, and what the verifier is told.
 * A fault strikes every 4-12 s and a window lasts 6-15 s, so two windows of one client may overlap: the header
 * stays required until the last of them ends, the verifier gets their union, and a window's switch-off (retried
 * while the database is down) finishes before the next window switches on, so an old switch-off never lands in a
 * new window.
 */

/** While the header was required of a client: from after the switch committed to before it ended. */
export type RequiredWindow = { client: 0 | 1; from: number; to: number };

/**
 * Whether a keyless request had to be refused: its answer came back inside a window of its client, so the server
 * read that client's mode inside it. One given up on inside a window proves nothing: the server may read it only
 * after the window ends (beside two CPU hogs, seed 540064958's were read 2 s after their clients had left).
 */
export function mustBeRefused(
  windows: readonly RequiredWindow[],
  o: { client: 0 | 1; key: string | null; sentAt?: number; doneAt?: number; status?: number },
): boolean {
  if (o.key !== null || o.status === undefined) return false;
  return windows.some((w) => w.client === o.client && o.sentAt! >= w.from && o.doneAt! <= w.to);
}

/** Sets the client's `key_required_since` (on) or clears it (off); resolves once it committed. */
export type SwitchHeader = (client: 0 | 1, on: boolean) => Promise<void>;

type Open = { from: number; holders: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class RequiredWindows {
  readonly windows: RequiredWindow[] = [];
  private readonly open = new Map<0 | 1, Open>();
  private readonly switchingOff = new Map<0 | 1, Promise<void>>();

  constructor(private readonly switchHeader: SwitchHeader) {}

  /**
   * Requires the header of `client` for `ms` from now (or from when it is on). Resolves once it is on, with the
   * window's end: when it has been switched back off, or the window joined a later one that is still open.
   * Calls for one client come one at a time (faults strike in turn).
   */
  async require(client: 0 | 1, ms: number): Promise<{ ending: Promise<void> }> {
    let open = this.open.get(client);
    if (!open) {
      await this.switchingOff.get(client);
      await this.switchHeader(client, true);
      open = { from: Date.now(), holders: 0 };
      this.open.set(client, open);
    }
    open.holders += 1;
    const held = open;
    return { ending: sleep(ms).then(() => this.release(client, held)) };
  }

  private async release(client: 0 | 1, open: Open) {
    open.holders -= 1;
    if (open.holders > 0) return;
    this.open.delete(client);
    this.windows.push({ client, from: open.from, to: Date.now() });
    const off = this.switchHeader(client, false);
    this.switchingOff.set(
      client,
      off.catch(() => {}),
    );
    await off;
  }
}
