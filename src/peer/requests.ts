/**
 * A process member's requests on their way through its Raft node, as etcd's EtcdServer tracks them (the
 * wait registry and linearizableReadNotify) — the per-member counterpart of src/cluster/proposals.ts:
 *  - a proposal carries the member's request ID in its entry; it is answered with what this member's own
 *    apply of that entry gave. Made while the member knows no leader, it waits for one (etcd 3.4's raft
 *    node holds it) and is proposed when one appears; unanswered at the request timeout it fails with the
 *    error etcd gives for the member's situation (parseProposeCtxErr);
 *  - a linearizable read asks the node for a read index (ReadIndex: the leader confirms it still leads with
 *    a heartbeat round) and is served once the member applied up to it; a leader change fails the reads
 *    still waiting for an index (ErrLeaderChanged); the request timeout fails the rest (ErrTimeout).
 */
import { errLeaderChanged, errProposalBlocked, errTimeout, errTimeoutDueToLeaderFail } from '../server/index.js';
import { NONE, type ConfChange, type NodeId, type ReadState } from '../raft/index.js';
import type { GrpcError } from '../server/index.js';
import type { Clock, TimerHandle } from '../sim/index.js';

/** What the requests need of the member's Raft loop. */
export interface MemberRaft {
  readonly id: NodeId;
  propose(data: Uint8Array): boolean;
  proposeConfChange(conf: ConfChange, data: Uint8Array): boolean;
  readIndex(context: string): boolean;
  leader(): NodeId;
  applied(): number;
  /** Is the stream to this peer up (the transport's view)? */
  reachable(id: NodeId): boolean;
}

interface Waiting {
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: GrpcError) => void;
  readonly timer: TimerHandle;
}

interface PendingProposal extends Waiting {
  /** Hands the entry to the Raft node; false when the node dropped it. */
  readonly submit: () => boolean;
  stage: 'noLeader' | 'proposed';
}

interface PendingRead extends Waiting {
  index: number | undefined;
}

export class MemberRequests {
  private readonly proposals = new Map<bigint, PendingProposal>();
  private readonly reads = new Map<string, PendingRead>();
  private seq = 0;

  constructor(
    private readonly raft: MemberRaft,
    private readonly clock: Clock,
    private readonly requestTimeoutMs: number,
  ) {}

  /** Proposes `data` under request `id`; resolves with what applying it here gave (see applied()). */
  propose(id: bigint, data: Uint8Array): Promise<unknown> {
    return this.submit(id, () => this.raft.propose(data));
  }

  /** Proposes a membership change under request `id` (its entry's data names the ID); resolves as propose() does. */
  proposeConfChange(id: bigint, conf: ConfChange, data: Uint8Array): Promise<unknown> {
    return this.submit(id, () => this.raft.proposeConfChange(conf, data));
  }

  private submit(id: bigint, submit: () => boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimer(this.clock.now() + this.requestTimeoutMs, () => this.proposalTimedOut(id), 'peer.request-timeout');
      const p: PendingProposal = { resolve, reject, timer, submit, stage: 'noLeader' };
      this.proposals.set(id, p);
      this.tryPropose(p);
    });
  }

  /** Resolves once this member applied up to a read index the leader confirmed. */
  linearizableRead(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ctx = `${this.raft.id.toString(16)}-${this.seq++}`;
      const timer = this.clock.setTimer(this.clock.now() + this.requestTimeoutMs, () => this.finishRead(ctx, errTimeout()), 'peer.read-timeout');
      this.reads.set(ctx, { resolve: () => resolve(), reject, timer, index: undefined });
      this.raft.readIndex(ctx);
    });
  }

  /** This member applied the entry of request `id` with this outcome. */
  applied(id: bigint, result: unknown, error?: GrpcError): void {
    const p = this.proposals.get(id);
    if (p === undefined) return;
    this.proposals.delete(id);
    this.clock.cancel(p.timer);
    if (error !== undefined) p.reject(error);
    else p.resolve(result);
  }

  /** The member's applied index moved: reads whose index it reached are served. */
  appliedTo(index: number): void {
    for (const [ctx, r] of this.reads) if (r.index !== undefined && r.index <= index) this.finishRead(ctx, undefined);
  }

  /** The node confirmed a read. */
  readState(rs: ReadState): void {
    const r = this.reads.get(rs.context);
    if (r === undefined) return;
    r.index = rs.index;
    this.appliedTo(this.raft.applied());
  }

  /** The member's leader changed: parked proposals go to the new one; reads without an index fail. */
  leaderChanged(): void {
    for (const p of this.proposals.values()) if (p.stage === 'noLeader') this.tryPropose(p);
    for (const [ctx, r] of this.reads) if (r.index === undefined) this.finishRead(ctx, errLeaderChanged());
  }

  /** The member stops: everything waiting fails as its connections close. */
  close(err: GrpcError): void {
    for (const [id, p] of this.proposals) {
      this.proposals.delete(id);
      this.clock.cancel(p.timer);
      p.reject(err);
    }
    for (const ctx of [...this.reads.keys()]) this.finishRead(ctx, err);
  }

  private tryPropose(p: PendingProposal): void {
    if (this.raft.leader() === NONE) return;
    if (p.submit()) p.stage = 'proposed';
  }

  private proposalTimedOut(id: bigint): void {
    const p = this.proposals.get(id);
    if (p === undefined) return;
    this.proposals.delete(id);
    const l = this.raft.leader();
    let err: GrpcError;
    if (p.stage === 'noLeader') err = errProposalBlocked();
    else if (l === NONE || l === this.raft.id || this.raft.reachable(l)) err = errTimeout();
    else err = errTimeoutDueToLeaderFail();
    p.reject(err);
  }

  private finishRead(ctx: string, err: GrpcError | undefined): void {
    const r = this.reads.get(ctx);
    if (r === undefined) return;
    this.reads.delete(ctx);
    this.clock.cancel(r.timer);
    if (err === undefined) r.resolve(undefined);
    else r.reject(err);
  }
}
