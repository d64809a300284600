/**
 * One member's Raft log (raft's raftLog over its Storage): the entries after the last snapshot's point,
 * the commit and applied indexes, and which entries are not on disk yet (raft's "unstable" part, handed to
 * the application in a Ready and stable once it calls advance()). A compaction keeps the term of the entry
 * just before the first kept one, so log matching still works at that boundary; a follower whose next
 * entry is before it gets the snapshot instead. What is committed is never truncated: a leader that asks
 * for it is a broken model, and the node throws rather than diverge.
 */
import type { Entry, Snapshot } from './messages.js';

export class RaftLog {
  /** Index and term of the entry before entries[0] (the snapshot's point after a compaction or restore). */
  private prevIndex: number;
  private prevTerm: bigint;
  private entries: Entry[] = [];
  committed: number;
  applied: number;
  /** Entries after this index are not on disk yet. */
  private stableTo: number;
  /** The latest snapshot: what a follower behind `prevIndex` is sent. */
  snapshot: Snapshot;
  /** A snapshot received from the leader and not yet handed to the application. */
  pendingSnapshot: Snapshot | undefined;

  constructor(snapshot: Snapshot, entries: readonly Entry[], committed: number) {
    this.snapshot = snapshot;
    this.prevIndex = snapshot.index;
    this.prevTerm = snapshot.term;
    this.entries = [...entries];
    if (entries.length > 0 && entries[0]!.index !== snapshot.index + 1) {
      throw new Error(`raft log: entries start at ${entries[0]!.index}, after a snapshot at ${snapshot.index}`);
    }
    this.committed = Math.max(committed, snapshot.index);
    this.applied = snapshot.index;
    this.stableTo = this.lastIndex();
  }

  firstIndex(): number {
    return this.prevIndex + 1;
  }

  lastIndex(): number {
    return this.prevIndex + this.entries.length;
  }

  lastTerm(): bigint {
    return this.term(this.lastIndex()) ?? this.prevTerm;
  }

  /** The term of the entry at `i`, or undefined when it is compacted away or not there yet. */
  term(i: number): bigint | undefined {
    if (i === this.prevIndex) return this.prevTerm;
    if (i < this.prevIndex || i > this.lastIndex()) return undefined;
    return this.entries[i - this.prevIndex - 1]!.term;
  }

  matchTerm(i: number, t: bigint): boolean {
    return this.term(i) === t;
  }

  /** Entries in [lo, hi), at most `max` of them; lo must be at least firstIndex(). */
  slice(lo: number, hi: number, max = Infinity): Entry[] {
    const from = lo - this.prevIndex - 1;
    const to = Math.min(hi - this.prevIndex - 1, from + max);
    return this.entries.slice(from, to);
  }

  /** Raft's up-to-date rule: a log ending at (index, term) is at least as up to date as this one. */
  isUpToDate(index: number, term: bigint): boolean {
    const lt = this.lastTerm();
    return term > lt || (term === lt && index >= this.lastIndex());
  }

  /** The leader's own append. */
  append(entries: readonly Entry[]): void {
    for (const e of entries) this.entries.push(e);
  }

  /**
   * A follower's append after entry (index, logTerm) matched: entries already there with the same term are
   * kept, the first conflicting one and everything after it is replaced. Returns the last new index.
   */
  maybeAppend(index: number, entries: readonly Entry[]): number {
    for (const e of entries) {
      if (e.index < this.firstIndex()) continue;
      const t = this.term(e.index);
      if (t === e.term) continue;
      if (t !== undefined) {
        if (e.index <= this.committed) throw new Error(`raft log: entry ${e.index} is committed and would be overwritten (term ${t} by ${e.term})`);
        this.entries.length = e.index - this.prevIndex - 1;
        this.stableTo = Math.min(this.stableTo, e.index - 1);
      }
      this.entries.push(e);
    }
    return index + entries.length;
  }

  commitTo(i: number): void {
    if (i > this.committed) {
      if (i > this.lastIndex()) throw new Error(`raft log: commit ${i} is past the last index ${this.lastIndex()}`);
      this.committed = i;
    }
  }

  /** Entries not on disk yet (to persist before this Ready's messages leave). */
  unstable(): Entry[] {
    return this.slice(this.stableTo + 1, this.lastIndex() + 1);
  }

  /** Whether unstable() has anything, without building it (asked after every step). */
  hasUnstable(): boolean {
    return this.stableTo < this.lastIndex();
  }

  /**
   * Whether toApply() has anything, without building it. The applied index is never below the snapshot's
   * point (firstIndex() - 1): a restore sets both, and a compaction keeps entries from at most the applied
   * index on (compact() refuses a snapshot past it), so what follows the applied index is still held.
   */
  hasToApply(): boolean {
    return Math.min(this.committed, this.stableTo) > this.applied;
  }

  stableUpTo(i: number): void {
    this.stableTo = Math.max(this.stableTo, Math.min(i, this.lastIndex()));
  }

  /** Committed, stable entries not applied yet. */
  toApply(): Entry[] {
    // Empty when nothing past the applied index is both committed and stable (the range is then empty).
    return this.slice(this.applied + 1, Math.min(this.committed, this.stableTo) + 1);
  }

  appliedTo(i: number): void {
    this.applied = Math.max(this.applied, i);
  }

  /** Replaces the whole log with a snapshot the leader sent (its state replaces ours). */
  restore(s: Snapshot): void {
    this.snapshot = s;
    this.pendingSnapshot = s;
    this.prevIndex = s.index;
    this.prevTerm = s.term;
    this.entries = [];
    this.committed = s.index;
    this.applied = s.index;
    this.stableTo = s.index;
  }

  /**
   * The application took a snapshot of its state at `s.index` (≤ applied): entries up to
   * `s.index - keep` are dropped (etcd keeps SnapshotCatchUpEntries for slow followers).
   */
  compact(s: Snapshot, keep: number): void {
    if (s.index > this.applied) throw new Error(`raft log: snapshot at ${s.index} is past applied ${this.applied}`);
    this.snapshot = s;
    const upTo = s.index - keep;
    if (upTo <= this.prevIndex) return;
    const t = this.term(upTo)!;
    this.entries = this.entries.slice(upTo - this.prevIndex);
    this.prevIndex = upTo;
    this.prevTerm = t;
  }

  /** All entries still held (for the checker and for tests). */
  held(): readonly Entry[] {
    return this.entries;
  }
}
