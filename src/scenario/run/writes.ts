/**
 * The member's history as the timeline draws it: every revision's events (puts, deletes, including those
 * of a lease expiry), each with what caused it. A restore replaces the member's history with the
 * snapshot's, so the recorded writes are rewritten to match.
 */
import { shownValue, str } from '../format.js';
import type { RunState } from './state.js';

/** Records every write the member applies from now on into the timeline. */
export function recordWrites(s: RunState): void {
  s.engine.onWrite((rev, events) => {
    for (const ev of events) {
      s.timeline.writes.push({ key: str(ev.kv.key), rev, type: ev.type, value: shownValue(ev.kv.value), cause: s.cause, line: s.line });
    }
    s.timeline.maxRevision = Math.max(s.timeline.maxRevision, rev);
  });
}

/**
 * The deletes at `rev` were the lessor's (a lease expired or was revoked: its keys go in one revision): mark
 * them so, since the step running at that moment (an `advance`, a `lease revoke`) did not name those keys.
 */
export function markLeaseDeletes(s: RunState, rev: number, cause: string): void {
  const writes = s.timeline.writes;
  for (let i = 0; i < writes.length; i++) {
    const w = writes[i]!;
    if (w.rev === rev && w.type === 'DELETE') writes[i] = { ...w, cause };
  }
}

/** After a restore the member's history is the snapshot's: drop recorded writes above it, add the snapshot's. */
export function resyncWrites(s: RunState, to: number): void {
  const writes = s.timeline.writes;
  for (let i = writes.length - 1; i >= 0; i--) if (writes[i]!.rev > to) writes.splice(i, 1);
  const have = new Set(writes.map((w) => w.rev));
  for (let r = Math.max(1, s.sim.mvcc.compactRevision); r <= to; r++) {
    if (have.has(r)) continue;
    for (const ev of s.sim.mvcc.eventsAt(r)) writes.push({ key: str(ev.kv.key), rev: r, type: ev.type, value: shownValue(ev.kv.value), cause: s.cause, line: s.line });
  }
  writes.sort((a, b) => a.rev - b.rev);
}
