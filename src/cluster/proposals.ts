/**
 * A member's requests on their way through Raft, as etcd's EtcdServer tracks them:
 *  - a proposal (processInternalRaftRequest) goes to the leader the member knows, becomes an entry there,
 *    and is answered with what the member's own apply gave, once it applied it (etcd's wait registry);
 *    without a leader it waits for one; after the request timeout it fails with the error for the
 *    member's situation (parseProposeCtxErr);
 *  - a linearizable read (linearizableReadNotify) gets a read index from the leader — which confirms with a
 *    quorum that it still leads and has committed an entry of its term (ReadOnlySafe) — and is served once
 *    the member applied up to it; a leader change fails the reads still waiting for an index.
 */
import type { GrpcError } from '../server/index.js';
import type { Clock } from '../sim/index.js';
import { errLeaderChanged, errProposalBlocked, errTimeout, errTimeoutDueToConnectionLost, errTimeoutDueToLeaderFail, errTransportClosing } from './errors.js';
import type { EntryBody, MemberState, Proposal, ReadWait, Reply } from './member_state.js';
import type { Raft } from './raft.js';
import type { Entry } from './raft_log.js';

/** Settings and hooks the requests need from the cluster. */
export interface RequestsContext {
  readonly clock: Clock;
  readonly requestTimeoutMs: number;
  /** Records a proposal in the trace (`propose <label> at <index> via <member>`). */
  traceProposal(e: Entry, via: MemberState): void;
  /** Applies what became due. */
  pump(): void;
}

/** Every proposal and linearizable read not answered yet. */
export class Requests {
  private readonly proposals = new Map<Entry, Proposal>();
  /** Every proposal not answered yet (also those lost on the way to a leader, which no entry holds). */
  private readonly waiting = new Set<Proposal>();

  constructor(
    private readonly raft: Raft,
    private readonly ctx: RequestsContext,
  ) {}

  /** Proposes a request at member `m`; `make` builds the entry at the leader, `reply` gets `m`'s apply result. */
  propose(m: MemberState, make: (leader: MemberState) => EntryBody, reply: Reply<unknown>): void {
    const { clock, requestTimeoutMs } = this.ctx;
    const p: Proposal = { member: m, incarnation: m.incarnation, reply, stage: 'noLeader', timer: undefined, entry: undefined };
    p.timer = clock.setTimer(clock.now() + requestTimeoutMs, () => this.proposalTimedOut(p), 'cluster.request-timeout');
    this.waiting.add(p);
    this.forward(m, p, make);
    this.ctx.pump();
  }

  /** A linearizable read at `m`: ReadIndex through the leader, wait until `m` applied up to it, then `serve`. */
  readIndex(m: MemberState, serve: () => void, reply: Reply<unknown>): void {
    const { clock, requestTimeoutMs } = this.ctx;
    const r: ReadWait = { member: m, incarnation: m.incarnation, serve, reply, index: undefined, done: false, timer: undefined };
    r.timer = clock.setTimer(clock.now() + requestTimeoutMs, () => this.finishRead(r, errTimeout()), 'cluster.read-timeout');
    m.reads.push(r);
    this.tryReads(m);
  }

  /** The leader `m` knows and can reach, if any: where keep-alives and TimeToLive are forwarded. */
  reachableLeader(m: MemberState): MemberState | undefined {
    const l = this.raft.knownLeader(m);
    return l !== undefined && l.up && l.role === 'leader' && (l === m || this.raft.connected(m, l)) ? l : undefined;
  }

  /** `m` now knows a leader: what it proposed without one goes there. */
  forwardWaiting(m: MemberState): void {
    const waiting = m.noLeader;
    m.noLeader = [];
    for (const w of waiting) this.forward(m, w.proposal, w.make);
  }

  /** `m` applied `e`: the proposal `m` made of it is answered. */
  applied(m: MemberState, e: Entry, result: unknown, error: GrpcError | undefined): void {
    const p = this.proposals.get(e);
    if (p !== undefined && p.member === m) this.settle(p, result, error, e);
    if (m.reads.length > 0) this.tryReads(m);
  }

  /**
   * `m` learned of a new leader (etcd 3.4's leaderChanged notification, raised whenever the member's
   * leader becomes a different member, also after a time without one): its linearizable reads still
   * waiting for a read index fail with ErrLeaderChanged (v3_server.go requestCurrentIndex), which clients
   * may retry. Reads that have their index and wait for the member's apply are not affected.
   */
  leaderChanged(m: MemberState): void {
    for (const r of [...m.reads]) if (r.index === undefined && !r.done) this.finishRead(r, errLeaderChanged());
  }

  /** `m` crashed: everything it was waiting on fails as its connections close. */
  memberCrashed(m: MemberState): void {
    const dropped = m.noLeader;
    m.noLeader = [];
    for (const d of dropped) this.settle(d.proposal, undefined, errTransportClosing());
    for (const p of [...this.waiting]) if (p.member === m) this.settle(p, undefined, errTransportClosing(), p.entry);
    const reads = m.reads;
    m.reads = [];
    for (const r of reads) this.finishRead(r, errTransportClosing());
  }

  /** The cluster closes: every request still waiting fails. */
  close(): void {
    for (const p of [...this.waiting]) this.settle(p, undefined, errTransportClosing(), p.entry);
    for (const m of this.raft.states) {
      m.noLeader = [];
      for (const r of [...m.reads]) this.finishRead(r, errTransportClosing());
    }
  }

  /** Moves the member's waiting reads on: get a read index from the leader, serve those whose index it applied. */
  tryReads(m: MemberState): void {
    if (!m.up) return;
    const raft = this.raft;
    const pending = m.reads;
    m.reads = [];
    for (const r of pending) {
      if (r.done) continue;
      if (r.index === undefined) {
        const l = this.reachableLeader(m);
        // ReadIndex: the leader confirms with a quorum that it still leads, and has committed an entry of
        // its term (etcd's ReadOnlySafe); the read index is its commit index.
        if (l !== undefined && raft.leaderHasQuorum(l) && raft.log.termAt(raft.commitIndex) === l.term) r.index = raft.commitIndex;
      }
      if (r.index !== undefined && m.applied >= r.index) {
        r.done = true;
        if (r.timer !== undefined) this.ctx.clock.cancel(r.timer);
        try {
          r.serve();
        } catch (err) {
          r.reply.fail(err);
        }
        continue;
      }
      m.reads.push(r);
    }
  }

  /** Sends a proposal from `m` to the leader it knows, or parks it until `m` knows one. */
  private forward(m: MemberState, p: Proposal, make: (leader: MemberState) => EntryBody): void {
    if (p.stage === 'done') return;
    const l = this.raft.knownLeader(m);
    if (l === undefined) {
      p.stage = 'noLeader';
      m.noLeader.push({ proposal: p, make });
      return;
    }
    p.stage = 'proposed';
    // A proposal to a leader that is down or cut off is lost on the way (the request times out).
    if (l !== m && !this.raft.connected(m, l)) return;
    if (l.role !== 'leader' || !l.up) return;
    const e = this.raft.append(l, make(l));
    p.entry = e;
    this.proposals.set(e, p);
    this.ctx.traceProposal(e, m);
  }

  private settle(p: Proposal, result: unknown, error: GrpcError | undefined, e?: Entry): void {
    if (e !== undefined) this.proposals.delete(e);
    if (p.stage === 'done') return;
    p.stage = 'done';
    this.waiting.delete(p);
    if (p.timer !== undefined) this.ctx.clock.cancel(p.timer);
    if (p.incarnation !== p.member.incarnation && error === undefined) return;
    if (error !== undefined) p.reply.fail(error);
    else p.reply.ok(result);
  }

  /** etcd's parseProposeCtxErr: which timeout error the member answers with, by what it knows of its leader. */
  private proposalTimedOut(p: Proposal): void {
    if (p.stage === 'done') return;
    const m = p.member;
    p.timer = undefined;
    let err: GrpcError;
    if (p.stage === 'noLeader') {
      m.noLeader = m.noLeader.filter((w) => w.proposal !== p);
      err = errProposalBlocked();
    } else {
      const l = this.raft.knownLeader(m);
      if (l === undefined) err = errTimeout();
      else if (l === m) err = this.raft.leaderHasQuorum(m) ? errTimeout() : errTimeoutDueToConnectionLost();
      else err = this.raft.connected(m, l) ? errTimeout() : errTimeoutDueToLeaderFail();
    }
    this.settle(p, undefined, err, p.entry);
  }

  private finishRead(r: ReadWait, err: GrpcError): void {
    if (r.done) return;
    r.done = true;
    if (r.timer !== undefined) this.ctx.clock.cancel(r.timer);
    r.member.reads = r.member.reads.filter((x) => x !== r);
    r.reply.fail(err);
  }
}
