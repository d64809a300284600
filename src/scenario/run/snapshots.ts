/**
 * Member snapshots: `snapshot NAME` keeps the member's state at the current revision; `restore NAME`
 * applies it as a follower applies a leader's snapshot (its revision may go back; its watchers move to
 * unsynced and catch up from the restored history). Both are marked on the timeline.
 */
import type { StoreSnapshot } from '../../mvcc/index.js';
import { RunError } from '../run_error.js';
import type { RunState } from './state.js';
import { resyncWrites } from './writes.js';

/** The run's snapshots by name. */
export class ScenarioSnapshots {
  private readonly byName = new Map<string, StoreSnapshot>();

  constructor(private readonly s: RunState) {}

  /** `snapshot NAME`. */
  take(name: string): void {
    const s = this.s;
    this.byName.set(name, s.sim.snapshot());
    s.timeline.snapshots.push({ name, rev: s.sim.mvcc.currentRevision, line: s.line });
    s.out(`# snapshot ${name}: the member's state at revision ${s.sim.mvcc.currentRevision}`);
  }

  /** `restore NAME`. */
  restore(name: string): void {
    const s = this.s;
    const snap = this.byName.get(name);
    if (snap === undefined) throw new RunError('error', `restore ${name}: no snapshot named ${name} (take one first: snapshot ${name})`);
    const from = s.sim.mvcc.currentRevision;
    s.cause = `restore ${name}`;
    s.sim.restore(snap);
    const to = s.sim.mvcc.currentRevision;
    resyncWrites(s, to);
    s.timeline.restores.push({ name, fromRev: from, toRev: to, line: s.line, atMs: s.sim.clock.now() });
    s.out(`# restore ${name}: this member applies the snapshot as a follower does; revision ${from} → ${to}; its watchers move to unsynced`);
  }
}
