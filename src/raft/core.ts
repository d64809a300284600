/**
 * The state one member's Raft node keeps and what it hands its member (go.etcd.io/raft's raft struct and
 * RawNode's Ready plumbing): term, vote, leader, role, the log, the tracker of the others, the timers in
 * ticks, the outgoing messages and confirmed reads; `ready()` / `advance()`; the transitions every role
 * shares (reset, becoming a follower). node.ts adds how each role steps (elections, replication, reads,
 * transfer, membership); split so each reads on its own.
 */
import { RaftLog } from './log.js';
import { NONE, type ConfChange, type ConfState, type HardState, type Message, type NodeId, type ReadState, type Role, type SoftState } from './messages.js';
import { ProgressTracker, ReadOnly } from './progress.js';
import { type RaftNodeOptions, type RaftStatus, type RaftStorage, type Ready } from './ready.js';

/** What an empty part of a Ready holds (shared: nobody appends to a Ready's arrays). */
const NOTHING: readonly never[] = Object.freeze([]);

export abstract class RaftCore {
  readonly id: NodeId;
  readonly log: RaftLog;
  protected termNow: bigint;
  protected voteFor: NodeId;
  protected lead: NodeId = NONE;
  protected roleNow: Role = 'follower';
  protected readonly tracker: ProgressTracker;
  protected electionElapsed = 0;
  protected randomizedTimeout = 0;
  protected leadTransferee: NodeId = NONE;
  protected pendingConfIndex = 0;
  protected readonly reads = new ReadOnly();
  protected msgs: Message[] = [];
  protected readStates: ReadState[] = [];
  protected prevHard: HardState;
  protected prevSoft: SoftState;
  /** This member was removed from the cluster (applied, or a leader said so). */
  removed = false;
  protected readonly maxPerMessage: number;

  constructor(
    protected readonly opts: RaftNodeOptions,
    storage: RaftStorage,
  ) {
    this.id = opts.id;
    this.maxPerMessage = opts.maxEntriesPerMessage ?? 256;
    this.log = new RaftLog(storage.snapshot, storage.entries, storage.hardState.commit);
    this.termNow = storage.hardState.term;
    this.voteFor = storage.hardState.vote;
    this.tracker = new ProgressTracker(storage.snapshot.conf);
    this.prevHard = this.hardState();
    this.prevSoft = { leader: NONE, role: 'follower' };
    this.becomeFollower(this.termNow, NONE);
  }

  // ---- what the member reads ----

  get term(): bigint {
    return this.termNow;
  }
  get role(): Role {
    return this.roleNow;
  }
  get leader(): NodeId {
    return this.lead;
  }
  get conf(): ConfState {
    return this.tracker.conf;
  }

  status(): RaftStatus {
    return {
      id: this.id,
      role: this.roleNow,
      term: this.termNow,
      vote: this.voteFor,
      leader: this.lead,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      conf: this.conf,
    };
  }

  /** The leader's match index per member (for `endpoint status`-like views and tests). */
  matchOf(id: NodeId): number | undefined {
    return this.roleNow === 'leader' ? this.tracker.prs.get(id)?.match : undefined;
  }

  hasReady(): boolean {
    return (
      this.msgs.length > 0 ||
      this.readStates.length > 0 ||
      this.log.pendingSnapshot !== undefined ||
      this.log.hasUnstable() ||
      this.log.hasToApply() ||
      this.hardChanged() ||
      this.prevSoft.leader !== this.lead ||
      this.prevSoft.role !== this.roleNow
    );
  }

  /**
   * What to persist, send and apply now; hand it back to advance() once done. Built as one shape, with
   * nothing allocated for what is empty: a member handles a Ready after every step.
   */
  ready(): Ready {
    const softChanged = this.prevSoft.leader !== this.lead || this.prevSoft.role !== this.roleNow;
    const rd: Ready = {
      softState: softChanged ? { leader: this.lead, role: this.roleNow } : undefined,
      hardState: this.hardChanged() ? this.hardState() : undefined,
      snapshot: this.log.pendingSnapshot,
      entries: this.log.hasUnstable() ? this.log.unstable() : NOTHING,
      committedEntries: this.log.hasToApply() ? this.log.toApply() : NOTHING,
      messages: this.msgs.length > 0 ? this.msgs : NOTHING,
      readStates: this.readStates.length > 0 ? this.readStates : NOTHING,
    };
    if (this.msgs.length > 0) this.msgs = [];
    if (this.readStates.length > 0) this.readStates = [];
    if (rd.softState !== undefined) this.prevSoft = rd.softState;
    if (rd.hardState !== undefined) this.prevHard = rd.hardState;
    return rd;
  }

  /** The member persisted and applied a Ready: its entries are stable, its committed entries applied. */
  advance(rd: Ready): void {
    if (rd.snapshot !== undefined && this.log.pendingSnapshot === rd.snapshot) this.log.pendingSnapshot = undefined;
    const lastNew = rd.entries[rd.entries.length - 1];
    if (lastNew !== undefined && this.log.term(lastNew.index) === lastNew.term) this.log.stableUpTo(lastNew.index);
    for (const e of rd.committedEntries) {
      if (e.index <= this.log.applied) continue;
      this.log.appliedTo(e.index);
      if (e.type === 'conf' && e.conf !== undefined) this.applyConfChange(e.conf);
    }
  }

  protected hardState(): HardState {
    return { term: this.termNow, vote: this.voteFor, commit: this.log.committed };
  }

  /** The hard state moved since the last Ready (compared field by field, nothing built to ask). */
  private hardChanged(): boolean {
    const p = this.prevHard;
    return p.term !== this.termNow || p.vote !== this.voteFor || p.commit !== this.log.committed;
  }

  protected promotable(): boolean {
    return this.tracker.voters.has(this.id) && !this.removed;
  }

  protected reset(term: bigint): void {
    if (term !== this.termNow) {
      this.termNow = term;
      this.voteFor = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    const et = this.opts.electionTicks;
    this.randomizedTimeout = et + this.opts.random.nextInt(0, et - 1);
    this.leadTransferee = NONE;
    this.tracker.resetVotes();
    this.reads.clear();
  }

  protected becomeFollower(term: bigint, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.roleNow = 'follower';
  }


  /**
   * Queues a message from this node, at its term unless the caller names one. Every caller hands a fresh
   * literal, so it is completed in place: a copy of each (an object spread over a dozen message shapes)
   * was most of the Raft part of a put's CPU.
   */
  protected send(m: Omit<Message, 'from' | 'term'> & { term?: bigint; from?: NodeId }): void {
    const out: { from?: NodeId; term?: bigint } = m;
    out.from ??= this.id;
    out.term ??= this.termNow;
    this.msgs.push(m as Message);
  }


  /** A conf change entry was applied. */
  protected abstract applyConfChange(cc: ConfChange): void;
}
