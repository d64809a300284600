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
import type { Entry, ReadState } from '../raft/index.js';
import type { GrpcError } from '../server/index.js';
import type { Clock } from '../sim/index.js';
import { errLeaderChanged, errProposalBlocked, errTimeout, errTimeoutDueToConnectionLost, errTimeoutDueToLeaderFail, errTransportClosing } from '../server/index.js';
import type { EntryBody, MemberState, Proposal, ReadWait, Reply } from './member_state.js';
import type { RaftGroup } from './raft_group.js';

/** Settings and hooks the requests need from the cluster. */
export interface RequestsContext {
  readonly clock: Clock;
  readonly requestTimeoutMs: number;
  /** Records a proposal in the trace (`propose <label> at <index> via <member>`). */
  traceProposal(label: string, index: number, via: MemberState): void;
}

/** Every proposal and linearizable read not answered yet. */
export class Requests {
  /** Proposals by their entry's bytes, until answered. */
  private readonly proposals = new Map<Uint8Array, Proposal>();
  /** Every proposal not answered yet (also those not proposed yet, which no entry holds). */
  private readonly waiting = new Set<Proposal>();
  /** Linearizable reads waiting for their read index, by their ReadIndex context. */
  private readonly readsByContext = new Map<string, ReadWait>();
  private readSeq = 0;
  /** Members whose reads tryReads goes over now, and whether it is to go over them again. */
  private readonly readsBusy = new Map<MemberState, boolean>();

  constructor(
    private readonly raft: RaftGroup,
    private readonly ctx: RequestsContext,
  ) {}

  /** Proposes a request at member `m`; `make` builds the entry (the leader `m` knows picks what it picks), `reply` gets `m`'s apply result. */
  propose(m: MemberState, make: (leader: MemberState) => EntryBody, reply: Reply<unknown>): void {
    const { clock, requestTimeoutMs } = this.ctx;
    const p: Proposal = { member: m, incarnation: m.incarnation, reply, stage: 'noLeader', timer: undefined, data: undefined, label: '' };
    p.timer = clock.setTimer(clock.now() + requestTimeoutMs, () => this.proposalTimedOut(p), 'cluster.request-timeout');
    this.waiting.add(p);
    this.forward(m, p, make);
  }

  /** A linearizable read at `m`: ReadIndex through the leader, wait until `m` applied up to it, then `serve`. */
  readIndex(m: MemberState, serve: () => void, reply: Reply<unknown>): void {
    const { clock, requestTimeoutMs } = this.ctx;
    const context = `${m.name}/${++this.readSeq}`;
    const r: ReadWait = { member: m, incarnation: m.incarnation, serve, reply, context, index: undefined, done: false, timer: undefined };
    r.timer = clock.setTimer(clock.now() + requestTimeoutMs, () => this.finishRead(r, errTimeout()), 'cluster.read-timeout');
    m.reads.push(r);
    this.readsByContext.set(context, r);
    this.tryReads(m);
  }

  /** Leader `l` appended entries: the proposals among them get their index (in the trace). */
  appended(entries: readonly Entry[]): void {
    for (const e of entries) {
      const p = this.proposals.get(e.data);
      if (p !== undefined) this.ctx.traceProposal(p.label, e.index, p.member);
    }
  }

  /** `m`'s node confirmed a read index: the read waits for `m` to apply up to it. */
  readState(m: MemberState, rs: ReadState): void {
    const r = this.readsByContext.get(rs.context);
    if (r === undefined || r.done || r.index !== undefined || r.member !== m) return;
    r.index = rs.index;
    this.readsByContext.delete(rs.context);
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
    const p = this.proposals.get(e.data);
    if (p !== undefined && p.member === m) this.settle(p, result, error);
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
    for (const p of [...this.waiting]) if (p.member === m) this.settle(p, undefined, errTransportClosing());
    const reads = m.reads;
    m.reads = [];
    for (const r of reads) this.finishRead(r, errTransportClosing());
  }

  /** The cluster closes: every request still waiting fails. */
  close(): void {
    for (const p of [...this.waiting]) this.settle(p, undefined, errTransportClosing());
    for (const m of this.raft.states) {
      m.noLeader = [];
      for (const r of [...m.reads]) this.finishRead(r, errTransportClosing());
    }
  }

  /**
   * Moves the member's waiting reads on: those without a read index ask the leader (again: a request or its
   * answer lost on the way is asked anew, as etcd 3.5+ retries ReadIndex), those whose index the member
   * applied are served.
   */
  tryReads(m: MemberState): void {
    if (!m.up) return;
    if (this.readsBusy.has(m)) {
      this.readsBusy.set(m, true); // the outer call goes over them again
      return;
    }
    this.readsBusy.set(m, false);
    try {
      let ask = true;
      for (;;) {
        this.readsOnce(m, ask);
        if (this.readsBusy.get(m) !== true) break;
        this.readsBusy.set(m, false);
        ask = false; // an apply meanwhile: serve what it let go, without asking again
      }
    } finally {
      this.readsBusy.delete(m);
    }
  }

  private readsOnce(m: MemberState, ask: boolean): void {
    const pending = m.reads;
    m.reads = [];
    for (const r of pending) {
      if (r.done) continue;
      // ReadIndex: the leader confirms with a quorum that it still leads, and has committed an entry of
      // its term (etcd's ReadOnlySafe); the read index is its commit index then.
      if (r.index === undefined && ask) this.raft.readIndex(m, r.context);
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
    const body = make(l);
    const data = this.raft.entryData(body);
    p.data = data;
    p.label = body.label;
    this.proposals.set(data, p);
    // A proposal to a leader that is down or cut off is lost on the way (the request times out), as is a
    // second membership change while one is pending (etcd's leader turns it into an empty entry).
    if (body.conf === undefined) this.raft.propose(m, data);
    else this.raft.proposeConfChange(m, body.conf, data);
  }

  private settle(p: Proposal, result: unknown, error: GrpcError | undefined): void {
    if (p.data !== undefined) this.proposals.delete(p.data);
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
    this.settle(p, undefined, err);
  }

  private finishRead(r: ReadWait, err: GrpcError): void {
    if (r.done) return;
    r.done = true;
    if (r.timer !== undefined) this.ctx.clock.cancel(r.timer);
    r.member.reads = r.member.reads.filter((x) => x !== r);
    this.readsByContext.delete(r.context);
    r.reply.fail(err);
  }
}
