/**
 * Raft's safety properties (the Raft paper's Figure 3), checked across the nodes of one cluster as a test
 * sees all of them at once — what src/cluster/checker.ts runs over every member of the in-process cluster
 * (and a process member on itself). After each step of a simulated network (or on demand) it checks:
 *  - election safety: at most one member leads a term;
 *  - log matching: two logs holding an entry of the same index and term hold the same entry there and
 *    agree on the term of the entry before it (so, by induction, on the whole prefix);
 *  - leader completeness: a leader of term T holds every entry known committed in an earlier term;
 *  - state machine safety: every member applies the same entry at an index, and a committed entry never
 *    changes; a member's commit index never moves back (a restart may return it to its persisted value)
 *    and it never applies past it;
 *  - snapshots: a member snapshots only what it applied, its log is compacted only up to its snapshot,
 *    a snapshot's point (index, term) is the committed entry there, the term its log keeps at the
 *    compaction boundary is that entry's too, every member's snapshot at one index holds the same state,
 *    and a member's snapshot never moves back (but by a restart, which loses a snapshot not yet saved).
 * It reads nodes and changes nothing; it remembers one record per index it saw (tests' logs are short).
 * Run after every tick of a long run, it does not look again at what cannot have changed: a committed
 * entry it checked in a node's log (the very same object at its index: entries are immutable values; one
 * identity comparison each, so a committed entry replaced by another is checked again), a snapshot's
 * digest, and, for a leader of a term, the committed indexes it already found in that leader's log.
 */
import { NONE, type Entry, type NodeId } from './messages.js';
import type { RaftNode } from './node.js';

export interface RaftNodeViolation {
  readonly invariant: 'election safety' | 'log matching' | 'leader completeness' | 'state machine safety' | 'commit monotonic' | 'snapshot';
  readonly detail: string;
}

/** An entry's identity: its kind, its bytes and its conf change (FNV-1a, enough to tell entries apart). */
export function entryFingerprint(e: Entry): string {
  let h = 0x811c9dc5;
  for (const b of e.data) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  const conf = e.conf === undefined ? '' : `${e.conf.type}:${e.conf.id}`;
  return `${e.type}/${conf}/${e.data.length}/${h.toString(16)}`;
}

interface Committed {
  readonly term: bigint;
  readonly fp: string;
  /** The committing member's term when it first knew: leaders of later terms must hold the entry. */
  readonly knownAt: bigint;
}

export class RaftNodeChecker {
  private readonly violations: RaftNodeViolation[] = [];
  private readonly leaderOfTerm = new Map<bigint, NodeId>();
  /** (index, term) → fingerprint and the term before it. */
  private readonly entries = new Map<string, { readonly fp: string; readonly prevTerm: bigint | undefined }>();
  private readonly committed = new Map<number, Committed>();
  private readonly applied = new Map<number, string>();
  private readonly commitOf = new Map<NodeId, number>();
  /** Snapshot index → its term and its state's fingerprint, as the first member seen holding it had them. */
  private readonly snapshots = new Map<number, { readonly term: bigint; readonly fp: string }>();
  private readonly snapshotOf = new Map<NodeId, number>();
  /** Per node, the committed entries of its log already checked. */
  private readonly checkedEntries = new WeakMap<RaftNode, CheckedEntries>();
  /** A snapshot's digest, by its bytes (every check looks at each node's snapshot). */
  private readonly snapshotDigests = new WeakMap<Uint8Array, string>();
  /** Per leader node, the term and the committed index up to which its log was found complete. */
  private readonly completeUpTo = new WeakMap<RaftNode, { readonly term: bigint; readonly upTo: number }>();
  private highestCommitted = 0;

  get found(): readonly RaftNodeViolation[] {
    return this.violations;
  }

  assertHolds(): void {
    const v = this.violations[0];
    if (v !== undefined) throw new Error(`Raft invariant broken: ${v.invariant}: ${v.detail}${this.violations.length > 1 ? ` (and ${this.violations.length - 1} more)` : ''}`);
  }

  /** A member restarted from its storage: its commit index starts again from what it persisted. */
  restarted(id: NodeId): void {
    this.commitOf.delete(id);
    this.snapshotOf.delete(id);
  }

  /** A member applied these entries (from its Ready). */
  appliedEntries(id: NodeId, es: readonly Entry[]): void {
    for (const e of es) {
      const fp = entryFingerprint(e);
      const had = this.applied.get(e.index);
      if (had === undefined) this.applied.set(e.index, fp);
      else if (had !== fp) this.report('state machine safety', `member ${id} applied ${fp} at ${e.index}, another applied ${had}`);
    }
  }

  /** Checks every node as it is now. */
  check(nodes: readonly RaftNode[]): void {
    for (const n of nodes) this.checkNode(n);
  }

  private report(invariant: RaftNodeViolation['invariant'], detail: string): void {
    if (this.violations.length < 20) this.violations.push({ invariant, detail });
  }

  private checkSnapshot(n: RaftNode): void {
    const log = n.log;
    const s = log.snapshot;
    if (s.index > log.applied) this.report('snapshot', `member ${n.id} snapshot at ${s.index} is past its applied ${log.applied}`);
    const boundary = log.firstIndex() - 1;
    if (boundary > s.index) this.report('snapshot', `member ${n.id} compacted its log to ${boundary}, past its snapshot at ${s.index}`);
    const before = this.snapshotOf.get(n.id);
    if (before !== undefined && s.index < before) this.report('snapshot', `member ${n.id} snapshot ${before} → ${s.index}`);
    this.snapshotOf.set(n.id, s.index);
    if (s.index === 0) return;
    let fp = this.snapshotDigests.get(s.data);
    if (fp === undefined) this.snapshotDigests.set(s.data, (fp = entryFingerprint({ index: s.index, term: s.term, type: 'normal', data: s.data })));
    const seen = this.snapshots.get(s.index);
    if (seen === undefined) this.snapshots.set(s.index, { term: s.term, fp });
    else if (seen.term !== s.term || seen.fp !== fp) this.report('snapshot', `member ${n.id} snapshot at ${s.index}: ${fp}@${s.term}, elsewhere ${seen.fp}@${seen.term}`);
    for (const [i, t] of [[s.index, s.term], [boundary, log.term(boundary)]] as const) {
      const c = this.committed.get(i);
      if (c !== undefined && t !== undefined && i > 0 && c.term !== t) this.report('snapshot', `member ${n.id} holds term ${t} at ${i} (snapshot or compaction point), committed there: ${c.fp}@${c.term}`);
    }
  }

  private checkNode(n: RaftNode): void {
    const log = n.log;
    if (n.role === 'leader') {
      const other = this.leaderOfTerm.get(n.term);
      if (other === undefined) this.leaderOfTerm.set(n.term, n.id);
      else if (other !== n.id) this.report('election safety', `term ${n.term} led by ${other} and ${n.id}`);
    }
    const before = this.commitOf.get(n.id);
    if (before !== undefined && log.committed < before) this.report('commit monotonic', `member ${n.id} commit ${before} → ${log.committed}`);
    this.commitOf.set(n.id, log.committed);
    if (log.applied > log.committed) this.report('state machine safety', `member ${n.id} applied ${log.applied} > commit ${log.committed}`);
    this.checkSnapshot(n);
    let checked = this.checkedEntries.get(n);
    if (checked === undefined) this.checkedEntries.set(n, (checked = new CheckedEntries()));
    checked.dropBefore(log.firstIndex());
    for (const e of log.held()) {
      if (checked.has(e)) continue;
      const key = `${e.index}/${e.term}`;
      const fp = entryFingerprint(e);
      const prevTerm = log.term(e.index - 1);
      const seen = this.entries.get(key);
      if (seen === undefined) this.entries.set(key, { fp, prevTerm });
      else if (seen.fp !== fp || (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm)) {
        this.report('log matching', `member ${n.id} at ${key}: ${fp} after term ${prevTerm}, elsewhere ${seen.fp} after term ${seen.prevTerm}`);
      }
      if (e.index > log.committed) continue;
      checked.add(e);
      const c = this.committed.get(e.index);
      if (c === undefined) {
        this.committed.set(e.index, { term: e.term, fp, knownAt: n.term });
        if (e.index > this.highestCommitted) this.highestCommitted = e.index;
      } else if (c.term !== e.term || c.fp !== fp) this.report('state machine safety', `member ${n.id} committed ${fp}@${e.term} at ${e.index}, before ${c.fp}@${c.term}`);
    }
    if (n.role !== 'leader' || n.leader === NONE) return;
    // A leader never changes its own log but by appending: what it held at its term stays held.
    const done = this.completeUpTo.get(n);
    const from = done !== undefined && done.term === n.term ? done.upTo + 1 : 0;
    for (let i = Math.max(from, log.firstIndex()); i <= this.highestCommitted; i++) {
      const c = this.committed.get(i);
      if (c === undefined || c.knownAt >= n.term) continue;
      const t = log.term(i);
      if (t !== c.term) this.report('leader completeness', `leader ${n.id} of term ${n.term} lacks ${i}@${c.term} committed by term ${c.knownAt}`);
    }
    this.completeUpTo.set(n, { term: n.term, upTo: Math.min(this.highestCommitted, log.lastIndex()) });
  }
}

/**
 * The committed entries of one node's log already checked, by index from `first`: what a WeakSet of them
 * told, with an array slot compared by identity instead of a hash lookup per entry per check.
 */
class CheckedEntries {
  private first = 0;
  private entries: (Entry | undefined)[] = [];

  has(e: Entry): boolean {
    return this.entries[e.index - this.first] === e;
  }

  add(e: Entry): void {
    const at = e.index - this.first;
    if (at >= 0 && at <= this.entries.length) this.entries[at] = e;
    else {
      // Not next to what was checked (a log that restarted from a later snapshot): start again from it.
      this.first = e.index;
      this.entries = [e];
    }
  }

  /** The log now starts at `firstIndex` (compacted, or restored from a snapshot): forget what was before. */
  dropBefore(firstIndex: number): void {
    const n = firstIndex - this.first;
    if (n <= 0) return;
    this.entries = n >= this.entries.length ? [] : this.entries.slice(n);
    this.first = firstIndex;
  }
}
