/**
 * Each member applies the committed entries in order, through its own server path — the same service
 * call a single member makes — at its own pace: an entry is due on a member at its commit time (when a
 * member first knew it committed) plus the member's apply lag, and not before the member's own node handed
 * it over (a member cut off applies what it missed once it has it), so a follower's store,
 * watches and serializable reads trail the leader's (etcd's apply loop, raftNode → applyAll, behind a slow
 * disk). Once every member applied an entry, its request is let go (raft_group.ts).
 */
import type { Entry } from '../raft/index.js';
import { toGrpcError, type GrpcError } from '../server/index.js';
import type { Clock } from '../sim/index.js';
import type { MemberState } from './member_state.js';
import type { RaftGroup } from './raft_group.js';

/** Applies due entries on the members marked dirty; tells `applied` what each apply gave. */
export class Applier {
  private applying = false;
  private readonly dirty = new Set<MemberState>();

  constructor(
    private readonly raft: RaftGroup,
    private readonly clock: Clock,
    private readonly applied: (m: MemberState, e: Entry, result: unknown, error: GrpcError | undefined) => void,
  ) {}

  /** `m` may have entries due (its node committed some, its lag changed, it resumed). */
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

  /** Applies, in order, the committed entries whose time has come on `m` (handed over + its lag). */
  private applyDue(m: MemberState): void {
    if (!m.up) return;
    const now = this.clock.now();
    while (m.applyQueue.length > 0) {
      const { entry, at } = m.applyQueue[0]!;
      const due = at + m.applyLagMs;
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
      m.applyQueue.shift();
      if (entry.index > m.applied) this.applyEntry(m, entry);
    }
  }

  private applyEntry(m: MemberState, e: Entry): void {
    let result: unknown;
    let error: GrpcError | undefined;
    const body = this.raft.bodyOf(e);
    try {
      // A leader's empty entry (and a conf change) moves the applied index and nothing else.
      if (body === undefined) m.server.noteRaftEntry();
      else result = body.apply(m.server, m);
    } catch (err) {
      error = toGrpcError(err);
    }
    m.applied = e.index;
    this.raft.applied(e);
    this.applied(m, e, result, error);
  }
}
