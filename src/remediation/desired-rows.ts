/**
 * The desired firewall state rows of one account as `baremetal_firewall_desired_state` shows them: the store's
 * rows (store/store.ts `allDesired`) as last read, after a decision, a due change applied or cancelled, and a
 * housekeeping that retired some (gauges.ts `refresh`, housekeeping.ts `retire`). The series are rendered from
 * it (collectors/families.ts); no code sets or removes one.
 */
import type { DesiredFirewall } from '../store/rows.js';

/** One row as its series shows it. */
export type DesiredRow = Pick<DesiredFirewall, 'serverId' | 'ip' | 'desiredState'>;

export class DesiredRows {
  #rows: readonly DesiredRow[] = [];
  #changes = 0;

  /** Counts the changes of the rows (a rendering reuses the family's bytes while it stays). */
  get changes(): number {
    return this.#changes;
  }

  /** The rows, in the store's order. */
  rows(): readonly DesiredRow[] {
    return this.#rows;
  }

  /**
   * The rows the store holds now, less those of a change cancelled before any state was applied to the IP
   * (firewall-cancel.ts keeps the row, not pending, nothing applied): nothing is wanted of that IP any more.
   */
  replace(all: readonly DesiredFirewall[]): void {
    const rows = all.filter((row) => row.pending || row.appliedState !== null);
    const same =
      rows.length === this.#rows.length &&
      rows.every((row, i) => {
        const held = this.#rows[i]!;
        return held.serverId === row.serverId && held.ip === row.ip && held.desiredState === row.desiredState;
      });
    if (same) return;
    this.#rows = rows.map(({ serverId, ip, desiredState }) => ({ serverId, ip, desiredState }));
    this.#changes++;
  }
}
