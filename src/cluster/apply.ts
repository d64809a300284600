/**
 * Each member applies the committed entries in order, through its own server path — the same service
 * call a single member makes — at its own pace: an entry is due on a member at its commit time plus the
 * member's apply lag, so a follower's store, watches and serializable reads trail the leader's (etcd's
 * apply loop, raftNode → applyAll, behind a slow disk). A member whose next entries were compacted away
 * moves on only by the leader's snapshot. Once every member applied an entry, its request is let go.
 */
import { toGrpcError, type GrpcError } from '../server/index.js';
import type { Clock } from '../sim/index.js';
import type { MemberState } from './member_state.js';
import type { Raft } from './raft.js';
import type { Entry } from './raft_log.js';

/** Applies due entries on the members marked dirty; tells `applied` what each apply gave. */
export class Applier {
  private applying = false;
  private readonly dirty = new Set<MemberState>();
  /** Every member applied the entries up to here: their requests were let go (releaseApplied). */
  private releasedTo = 0;

  constructor(
    private readonly raft: Raft,
    private readonly clock: Clock,
    private readonly applied: (m: MemberState, e: Entry, result: unknown, error: GrpcError | undefined) => void,
  ) {}

  /** `m` may have entries due (its commit moved, its lag changed, it resumed). */
  markDirty(m: MemberState): void {
    this.dirty.add(m);
  }

  /** Applies what is due on every member marked dirty; re-entrant calls just mark. */
  pump(): void {
    if (this.applying) return;
    this.applying = true;
    try {
      while (this.dirty.size > 0) {
        const m = this.dirty.values().next().value!;
        this.dirty.delete(m);
        this.applyDue(m);
      }
    } finally {
      this.applying = false;
    }
  }

  /** Forgets the member's apply timer (it paused, crashed, got a snapshot or a new lag). */
  cancelApplyTimer(m: MemberState): void {
    if (m.applyTimer !== undefined) this.clock.cancel(m.applyTimer);
    m.applyTimer = undefined;
    m.applyTimerAt = Infinity;
  }

  /** Applies, in order, the committed entries whose time has come on `m` (commit time + its lag). */
  private applyDue(m: MemberState): void {
    if (!m.up) return;
    const raft = this.raft;
    const now = this.clock.now();
    while (m.applied < m.commit) {
      if (m.applied < raft.log.offset) {
        // Its next entries are compacted away: only the leader's snapshot brings it forward.
        const l = raft.leader;
        if (l !== undefined && l !== m && raft.connected(l, m)) raft.sendSnapshot(l, m);
        else return;
        continue;
      }
      const e = raft.log.at(m.applied + 1);
      if (e === undefined || e.committedAt < 0) return;
      const due = e.committedAt + m.applyLagMs;
      if (due > now) {
        if (m.applyTimerAt > due) {
          this.cancelApplyTimer(m);
          m.applyTimerAt = due;
          m.applyTimer = this.clock.setTimer(
            due,
            () => {
              m.applyTimer = undefined;
              m.applyTimerAt = Infinity;
              this.markDirty(m);
              this.pump();
            },
            'cluster.apply',
          );
        }
        return;
      }
      this.applyEntry(m, e);
    }
  }

  private applyEntry(m: MemberState, e: Entry): void {
    let result: unknown;
    let error: GrpcError | undefined;
    try {
      result = e.apply(m.server);
    } catch (err) {
      error = toGrpcError(err);
    }
    m.applied = e.index;
    this.releaseApplied();
    this.applied(m, e, result, error);
  }

  /**
   * Lets go of the requests of entries every member applied: they never run again (a restart replays from
   * the member's own applied index, a snapshot brings state, not entries), and the log keeps them until it
   * compacts (--snapshot-count, 100,000 entries) — each holding its request's keys and values.
   */
  private releaseApplied(): void {
    let min = Infinity;
    for (const s of this.raft.states) if (s.applied < min) min = s.applied;
    if (min <= this.releasedTo) return;
    const log = this.raft.log;
    for (let i = Math.max(this.releasedTo, log.offset) + 1; i <= min; i++) {
      const e = log.at(i);
      if (e !== undefined) e.apply = appliedEverywhere;
    }
    this.releasedTo = min;
  }
}

/** What an entry every member applied holds instead of its request (releaseApplied): it never runs again. */
function appliedEverywhere(): never {
  throw new Error('etcdsim: internal error: a Raft entry applied again after every member applied it');
}
