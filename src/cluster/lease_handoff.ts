/**
 * Leases on a cluster expire only on the leader (etcd's lessor is primary there alone): the leader's
 * lessor hands expired leases over and the leader proposes their revokes (revokeExpiredLeases), and its
 * lease checkpoints (--experimental-enable-lease-checkpoint) as entries; a new leader's lessor is promoted
 * (every expiry extended by an election timeout, lessor.Promote), a former one demoted (lessor.Demote). A
 * paused leader proposes nothing; what its lessor handed over meanwhile is proposed when it runs again.
 */
import type { EntryBody, MemberState } from './member_state.js';
import type { RaftGroup } from './raft_group.js';

/** What the hand-off needs from the cluster. */
export interface LeaseHandoffContext {
  readonly electionTimeoutMs: number;
  /** Whether proposals are traced (EtcdClusterOptions.traceProposals). */
  readonly traceProposals: boolean;
  trace(event: string): void;
}

/** The leader's lessor, wired to Raft. */
export class LeaseHandoff {
  constructor(
    private readonly raft: RaftGroup,
    private readonly ctx: LeaseHandoffContext,
  ) {}

  /** `l` won an election: etcd's lessor.Promote(electionTimeout) — every expiry = now + election timeout + remaining TTL. */
  promote(l: MemberState): void {
    l.server.lessor.promote(this.ctx.electionTimeoutMs);
    this.hook(l);
  }

  /** The leader's lessor proposes what etcd's proposes: revokes of expired leases, lease checkpoints. */
  hook(l: MemberState): void {
    l.server.lessor.onExpired = (ids) => this.proposeExpiries(l, ids);
    l.server.lessor.onCheckpoint = (due) => {
      if (l.role !== 'leader' || !l.up) return; // a stopped leader checkpoints nothing; promote reschedules
      for (const { id, remaining } of due) {
        if (this.ctx.traceProposals) this.ctx.trace(`propose leaseCheckpoint ${id} ${remaining} via ${l.name}`);
        this.propose(l, { kind: 'leaseCheckpoint', label: `leaseCheckpoint ${id}`, apply: (s) => s.lessor.checkpoint(id, remaining) });
      }
    };
  }

  /** Demotes a leader's lessor: leases stop expiring there (etcd's lessor.Demote). */
  demote(m: MemberState): void {
    m.pendingExpiries.clear();
    if (!m.crashed) {
      m.server.lessor.demote();
      this.unhook(m);
    }
  }

  /** A member's (new) server proposes nothing until it leads. */
  unhook(m: MemberState): void {
    m.server.lessor.onExpired = undefined;
    m.server.lessor.onCheckpoint = undefined;
  }

  /** At a leader's tick: what its lessor handed over while it was paused is proposed now. */
  leaderTick(l: MemberState): void {
    if (l.pendingExpiries.size === 0) return;
    const ids = [...l.pendingExpiries].filter((id) => l.server.lessor.exists(id));
    l.pendingExpiries.clear();
    this.proposeExpiries(l, ids);
  }

  /** The leader's lessor found leases expired: the leader proposes their revokes (etcd's revokeExpiredLeases). */
  private proposeExpiries(l: MemberState, ids: readonly bigint[]): void {
    if (l.role !== 'leader') return;
    if (!l.up) {
      // A paused leader proposes them when it runs again (etcd's lessor retries expired leases).
      for (const id of ids) l.pendingExpiries.add(id);
      return;
    }
    for (const id of ids) {
      if (this.ctx.traceProposals) this.ctx.trace(`propose leaseExpire ${id} via ${l.name}`);
      this.propose(l, {
        kind: 'leaseExpire',
        label: `leaseExpire ${id}`,
        apply: (s) => {
          try {
            return s.lessor.expire(id);
          } catch {
            // Revoked meanwhile (a client revoke or an earlier expiry proposal): etcd's apply fails the
            // same way on every member; the entry still counts.
            s.noteRaftEntry();
            return undefined;
          }
        },
      });
    }
  }

  /** The leader proposes an entry of its own (no one waits for its answer). */
  private propose(l: MemberState, body: EntryBody): void {
    this.raft.propose(l, this.raft.entryData(body));
  }
}
