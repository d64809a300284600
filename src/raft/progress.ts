/**
 * What a member's Raft node tracks of the others (go.etcd.io/raft's tracker and readOnly): the voters and
 * learners, a leader's progress per member (match, next, probe / replicate / snapshot), the votes of an
 * election, the index a quorum holds, whether a quorum was heard from lately (CheckQuorum), and the reads
 * waiting for a heartbeat round to confirm the leader (ReadIndex).
 */
import type { ConfChange, ConfState, NodeId } from './messages.js';

type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** The leader's view of one member (raft's tracker.Progress). */
export interface Progress {
  match: number;
  next: number;
  state: ProgressState;
  /** Probe: one append out, wait for its answer. */
  paused: boolean;
  recentActive: boolean;
  /** Snapshot: the index sent, and ticks left before sending it again. */
  pendingSnapshot: number;
  snapshotTicks: number;
}

export function newProgress(next: number): Progress {
  return { match: 0, next, state: 'probe', paused: false, recentActive: false, pendingSnapshot: 0, snapshotTicks: 0 };
}

/** Back to probing: after a rejection, or a snapshot that got no answer. */
export function toProbe(pr: Progress): void {
  if (pr.state === 'snapshot') pr.next = Math.max(pr.match + 1, pr.pendingSnapshot + 1);
  pr.state = 'probe';
  pr.paused = false;
  pr.pendingSnapshot = 0;
}

export class ProgressTracker {
  readonly voters = new Set<NodeId>();
  readonly learners = new Set<NodeId>();
  /** Per member, while leading. */
  readonly prs = new Map<NodeId, Progress>();
  private readonly votes = new Map<NodeId, boolean>();

  constructor(conf: ConfState) {
    this.restore(conf);
  }

  get conf(): ConfState {
    return { voters: [...this.voters], learners: [...this.learners] };
  }

  restore(conf: ConfState): void {
    this.voters.clear();
    this.learners.clear();
    for (const v of conf.voters) this.voters.add(v);
    for (const l of conf.learners) this.learners.add(l);
  }

  /** Votes needed: a majority of the voters. */
  quorum(): number {
    return Math.floor(this.voters.size / 2) + 1;
  }

  resetVotes(): void {
    this.votes.clear();
  }

  /** Records a vote (the first from each member counts) and tells where the election stands. */
  recordVote(id: NodeId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(id)) this.votes.set(id, granted);
    let yes = 0;
    let no = 0;
    for (const [v, g] of this.votes) {
      if (!this.voters.has(v)) continue;
      if (g) yes++;
      else no++;
    }
    const q = this.quorum();
    if (yes >= q) return 'won';
    if (no > this.voters.size - q) return 'lost';
    return 'pending';
  }

  /** A new leader's view: everyone probed from its last index on; itself holds all of it. */
  resetProgress(lastIndex: number, self: NodeId): void {
    this.prs.clear();
    for (const id of [...this.voters, ...this.learners]) this.prs.set(id, newProgress(lastIndex + 1));
    const own = this.prs.get(self);
    if (own !== undefined) {
      own.match = lastIndex;
      own.recentActive = true;
    }
  }

  /** The highest index a quorum of voters holds. */
  committedIndex(): number {
    const matches: number[] = [];
    for (const id of this.voters) matches.push(this.prs.get(id)?.match ?? 0);
    matches.sort((a, b) => b - a);
    return matches[this.quorum() - 1] ?? 0;
  }

  /** Did a quorum of voters answer since the last check? Resets the marks for the next one. */
  quorumActive(self: NodeId): boolean {
    let active = 0;
    for (const [id, pr] of this.prs) {
      if (id !== self && pr.recentActive && this.voters.has(id)) active++;
      if (id === self && this.voters.has(id)) active++;
      if (id !== self) pr.recentActive = false;
    }
    return active >= this.quorum();
  }

  /**
   * Applies a single-member conf change to the sets; a leader's new member gets a progress from `next`.
   * (An update changes no set: the node does not bring it here.)
   */
  applyConfChange(cc: ConfChange & { readonly type: 'add' | 'addLearner' | 'remove' }, next: number, leading: boolean): void {
    switch (cc.type) {
      case 'add':
        this.learners.delete(cc.id);
        this.voters.add(cc.id);
        break;
      case 'addLearner':
        if (!this.voters.has(cc.id)) this.learners.add(cc.id);
        break;
      case 'remove':
        this.voters.delete(cc.id);
        this.learners.delete(cc.id);
        this.prs.delete(cc.id);
        return;
    }
    if (leading && !this.prs.has(cc.id)) this.prs.set(cc.id, newProgress(next));
  }
}

interface PendingRead {
  readonly context: string;
  readonly index: number;
  readonly from: NodeId;
  readonly acks: Set<NodeId>;
}

/** Reads waiting for a quorum to confirm the leader (raft's readOnly, ReadOnlySafe). */
export class ReadOnly {
  private pending: PendingRead[] = [];

  /** A request whose context is already pending is that request again (a resend): it is answered once. */
  add(context: string, index: number, from: NodeId, self: NodeId): void {
    if (this.pending.some((r) => r.context === context)) return;
    this.pending.push({ context, index, from, acks: new Set([self]) });
  }

  /** The latest read's context, which each heartbeat carries until a quorum answers it. */
  lastContext(): string | undefined {
    return this.pending[this.pending.length - 1]?.context;
  }

  /** A voter answered the heartbeat of `context`: the reads a quorum confirmed, oldest first. */
  ack(context: string, from: NodeId, tracker: ProgressTracker): readonly { readonly context: string; readonly index: number; readonly from: NodeId }[] {
    const at = this.pending.findIndex((r) => r.context === context);
    if (at < 0) return [];
    const r = this.pending[at]!;
    if (tracker.voters.has(from)) r.acks.add(from);
    if (r.acks.size < tracker.quorum()) return [];
    // Confirmed after this read arrived: it and every earlier read may go.
    return this.pending.splice(0, at + 1);
  }

  clear(): void {
    this.pending = [];
  }
}
