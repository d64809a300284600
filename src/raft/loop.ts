/**
 * One member's Raft loop (etcd's raftNode goroutine): ticks its Raft node every heartbeat interval on the
 * member's clock, steps the messages the transport delivers, and handles each Ready in etcd's order —
 * persist (entries, hard state, snapshot) before the messages leave, send them, hand committed entries and
 * a received snapshot to the member's apply, hand confirmed reads to whoever waits, then advance. After
 * applying, once more than `snapshotCount` entries were applied since the last snapshot (etcd's check:
 * --snapshot-count 10 snapshots at 11, 22, ..., observed on 3.4.23), it asks the member for a snapshot of its
 * applied state and lets the log go but for `catchUpEntries` (etcd's SnapshotCatchUpEntries).
 * Both kinds of member run it: a member in a process of its own (src/peer, its clock a real one, its own
 * ticker) and a member of the in-process cluster (src/cluster, whose one ticker ticks every member's loop
 * in turn on the shared virtual clock, and whose members apply behind their commit by an apply lag).
 */
import type { Clock, TimerHandle } from '../sim/index.js';
import type { RaftNodeChecker, RaftNodeViolation } from './checker.js';
import type { RaftPersistence } from './memory_storage.js';
import { NONE, type ConfChange, type Entry, type Message, type NodeId, type ReadState, type Role, type Snapshot } from './messages.js';
import type { RaftNode } from './node.js';
import type { Ready } from './ready.js';

export interface RaftLoopOptions {
  readonly node: RaftNode;
  readonly clock: Clock;
  readonly heartbeatMs: number;
  readonly persistence: RaftPersistence;
  send(m: Message): void;
  /** Apply a received snapshot (replaces the member's state), then these committed entries, in order. */
  apply(entries: readonly Entry[], snapshot: Snapshot | undefined): void;
  /** The member's state as of its applied index, for a snapshot. */
  snapshotData(): Uint8Array;
  /**
   * The index the member's state is at (etcd's appliedi), where a snapshot is taken; by default the node's
   * applied index (a member that applies committed entries within the Ready, as a process member does).
   */
  appliedIndex?(): number;
  readonly snapshotCount: number;
  readonly catchUpEntries: number;
  onReadState?(r: ReadState): void;
  /** The leader or the role changed. */
  onSoftState?(leader: NodeId, role: Role): void;
  /**
   * etcd's initial election tick advance (--initial-election-tick-advance, on by default; etcdserver's
   * adjustTicks): from the start, every 50 ms for rafthttp's 5 s connection read timeout, it asks how many
   * peers' streams are up, and once more than one is, moves the election clock `ticks` ahead (etcd: the
   * election ticks less two, leaving a leader's heartbeat time to arrive). A fresh cluster then elects
   * within a few heartbeats of its members finding each other instead of after a whole election timeout.
   * With `untilCampaign` the advance goes on past the usual ticks until the node campaigns (at most `ticks`
   * in all, and none once it hears a leader): a fresh cluster's chosen first candidate (process_member.ts)
   * elects without the randomized rest. `waitMs` is how long it looks for peers before it gives up (etcd:
   * rafthttp's 5 s connection read timeout, the default; a harness shortens it to reach that end cheaply).
   */
  /**
   * Raft's invariants checked on this node after each Ready (src/raft/checker.ts: what one member can see
   * of them — commit never back, applied never past commit, its log and snapshots consistent with what it
   * committed); the first violation is handed to `violated` (a process member exits with it).
   */
  readonly check?: { readonly checker: RaftNodeChecker; violated(v: RaftNodeViolation): void } | undefined;
  readonly initialTickAdvance?: { readonly ticks: number; readonly untilCampaign?: boolean; readonly waitMs?: number; activePeers(): number } | undefined;
}

/** How often, and for how long by default, the initial tick advance looks at the peers (etcd's 50 ms, ConnReadTimeout). */
const ADVANCE_POLL_MS = 50;
const ADVANCE_WAIT_MS = 5000;

export class RaftLoop {
  private ticker: TimerHandle | undefined;
  private advancer: TimerHandle | undefined;
  private handling = false;
  private stopped = false;

  constructor(private readonly opts: RaftLoopOptions) {}

  get node(): RaftNode {
    return this.opts.node;
  }

  start(): void {
    this.ticker = this.opts.clock.every(this.opts.heartbeatMs, () => this.tick(), { name: 'raft.tick' });
    this.handleReady();
    const advance = this.opts.initialTickAdvance;
    if (advance !== undefined) {
      const maxPolls = (advance.waitMs ?? ADVANCE_WAIT_MS) / ADVANCE_POLL_MS;
      let polls = 0;
      this.advancer = this.opts.clock.every(ADVANCE_POLL_MS, () => {
        polls++;
        if (!this.maybeAdvance() && polls >= maxPolls) this.stopAdvancer();
      }, { name: 'raft.initial-tick-advance' });
    }
  }

  /**
   * A peer's stream came up or went down: the initial tick advance looks at once rather than at its next
   * 50 ms poll (etcd polls; looking sooner only moves the same advance earlier within that poll).
   */
  peersChanged(): void {
    if (this.advancer !== undefined && !this.stopped) this.maybeAdvance();
  }

  /** The initial tick advance, once more than one peer's stream is up; whether it was made. */
  private maybeAdvance(): boolean {
    const advance = this.opts.initialTickAdvance;
    if (advance === undefined || advance.activePeers() <= 1) return false;
    this.stopAdvancer();
    const n = this.opts.node;
    for (let i = 0; i < advance.ticks && !this.stopped; i++) {
      if (advance.untilCampaign === true && (n.role !== 'follower' || n.leader !== NONE)) break;
      n.tick();
      this.handleReady();
    }
    return true;
  }

  stop(): void {
    this.stopped = true;
    if (this.ticker !== undefined) this.opts.clock.cancel(this.ticker);
    this.stopAdvancer();
  }

  private stopAdvancer(): void {
    if (this.advancer !== undefined) this.opts.clock.cancel(this.advancer);
    this.advancer = undefined;
  }

  /** One heartbeat interval (the loop's own ticker calls it; a cluster that ticks its members in turn does too). */
  tick(): void {
    if (this.stopped) return;
    this.opts.node.tick();
    this.handleReady();
  }

  step(m: Message): void {
    if (this.stopped) return;
    this.opts.node.step(m);
    this.handleReady();
  }

  propose(data: Uint8Array): boolean {
    const ok = this.opts.node.propose(data);
    this.handleReady();
    return ok;
  }

  proposeConfChange(conf: ConfChange, data: Uint8Array): boolean {
    const ok = this.opts.node.proposeConfChange(conf, data);
    this.handleReady();
    return ok;
  }

  readIndex(context: string): boolean {
    const ok = this.opts.node.readIndex(context);
    this.handleReady();
    return ok;
  }

  /** Runs `f` on the node (a conf change, a transfer) and handles what it produced. */
  act<T>(f: (n: RaftNode) => T): T {
    const out = f(this.opts.node);
    this.handleReady();
    return out;
  }

  private handleReady(): void {
    if (this.handling || this.stopped) return;
    this.handling = true;
    try {
      const n = this.opts.node;
      while (n.hasReady()) {
        const rd: Ready = n.ready();
        this.opts.persistence.save(rd);
        for (const m of rd.messages) this.opts.send(m);
        if (rd.snapshot !== undefined || rd.committedEntries.length > 0) this.opts.apply(rd.committedEntries, rd.snapshot);
        if (rd.softState !== undefined) this.opts.onSoftState?.(rd.softState.leader, rd.softState.role);
        n.advance(rd);
        for (const r of rd.readStates) this.opts.onReadState?.(r);
        this.maybeSnapshot();
        this.checkInvariants(rd);
      }
    } finally {
      this.handling = false;
    }
  }

  // Stryker disable all: the hook of the Raft checker, the properties' oracle (docs/mutation.md)
  private checkInvariants(rd: Ready): void {
    const c = this.opts.check;
    if (c === undefined) return;
    c.checker.appliedEntries(this.opts.node.id, rd.committedEntries);
    c.checker.check([this.opts.node]);
    const v = c.checker.found[0];
    if (v !== undefined) c.violated(v);
  }
  // Stryker restore all

  private maybeSnapshot(): void {
    const n = this.opts.node;
    const applied = this.opts.appliedIndex?.() ?? n.log.applied;
    if (applied - n.log.snapshot.index <= this.opts.snapshotCount) return;
    n.compact(applied, this.opts.snapshotData(), this.opts.catchUpEntries);
    this.opts.persistence.snapshotted(n.log.snapshot);
  }
}
