/**
 * The replicated log of a simulated cluster, held once for all members: the entries of the current leader's
 * log, from the last compaction point on. Each member's own log is a prefix of it (`match`) plus, after a
 * leader change, the few uncommitted entries of its own that the new leader's log does not have (`tail`) —
 * what Raft's log matching property allows, stored without copying: committed entries are the same on every
 * member, only uncommitted suffixes differ.
 */
import type { EtcdServer } from '../server/index.js';

/** What kind of Raft entry: a leader's empty entry at the start of its term, a request, a lease expiry or checkpoint. */
export type EntryKind = 'empty' | 'request' | 'leaseExpire' | 'leaseCheckpoint';

/** One Raft log entry: a request (or an internal proposal) and how every member applies it. */
export interface Entry {
  readonly index: number;
  readonly term: bigint;
  readonly kind: EntryKind;
  /** Short description for traces, e.g. `put`, `leaseGrant 7587…`, `leaseExpire 7587…`. */
  readonly label: string;
  /**
   * Applies the entry to one member through that member's own server path (its services and lessor): the
   * same function for every member, so every member reaches the same state. Returns the response message
   * of that member; throws the error that member answers with. Once every member applied the entry it is
   * replaced by a function that throws (EtcdCluster lets the request go).
   */
  apply: (server: EtcdServer) => unknown;
  /** Virtual time at which the leader saw the entry committed; -1 before. */
  committedAt: number;
}

/** The entries of the current leader's log after the compaction point, and the terms of the compacted ones. */
export class RaftLog {
  /** Index of the last compacted entry (what a snapshot covers). */
  offset = 0;
  /** entries[i] has index offset + 1 + i. */
  entries: Entry[] = [];
  /** Term boundaries of compacted entries: the term of index i is that of the last start <= i. */
  private readonly compactedTerms: Array<{ readonly index: number; readonly term: bigint }> = [];

  constructor(initialIndex: number, initialTerm: bigint) {
    this.offset = initialIndex;
    this.compactedTerms.push({ index: 0, term: initialTerm });
  }

  get lastIndex(): number {
    return this.offset + this.entries.length;
  }

  /** The entry at `index`, or undefined if compacted or not there. */
  at(index: number): Entry | undefined {
    return index > this.offset ? this.entries[index - this.offset - 1] : undefined;
  }

  /** Term of the entry at `index` (compacted ones included). */
  termAt(index: number): bigint {
    const e = this.at(index);
    if (e !== undefined) return e.term;
    let term = 0n;
    for (const s of this.compactedTerms) if (s.index <= index) term = s.term;
    return term;
  }

  append(e: Entry): void {
    this.entries.push(e);
  }

  /** Drops the entries after `index` (a new leader's log replaces an old leader's uncommitted suffix). */
  truncateAfter(index: number): void {
    if (index < this.offset) throw new Error(`RaftLog: cannot truncate below the compaction point ${this.offset}`);
    this.entries.length = index - this.offset;
  }

  /** Compacts every entry up to and including `index` (etcd's raft log compaction after a snapshot). */
  compact(index: number): void {
    if (index <= this.offset) return;
    const upTo = Math.min(index, this.lastIndex);
    for (let i = this.offset + 1; i <= upTo; i++) {
      const t = this.at(i)!.term;
      const last = this.compactedTerms[this.compactedTerms.length - 1]!;
      if (last.term !== t) this.compactedTerms.push({ index: i, term: t });
    }
    this.entries = this.entries.slice(upTo - this.offset);
    this.offset = upTo;
  }
}
