/**
 * The MVCC store (etcd server/storage/mvcc/kvstore.go, kvstore_txn.go): a B-tree revision index over
 * keyIndexes, the current and compacted revisions, and write transactions that take one main revision and
 * number their changes with sub-revisions. This file holds the storage primitives; the request semantics
 * (options, txns, validation) live in range.ts, txn.ts and validate.ts, and MvccStore in kv.ts ties them
 * together.
 */
import { ByteSlab, EMPTY_BYTES, keyString, type KeyString } from './bytes.js';
import { ErrCompacted, ErrFutureRev } from './errors.js';
import { fail } from '../etcd/index.js';
import { KeyIndex, count, isTombstone, type Tally } from './key_index.js';
import { setSubRevision } from './sub_revision.js';
import { PageCounts } from './page_counts.js';
import { TreeIndex } from './tree_index.js';
import type { Event, KeyValue, LeaseHook } from './types.js';

/**
 * The end of a range as the index understands it: `undefined` = the single key, `''` = no upper bound
 * (etcd's range_end "\0"), anything else = exclusive upper bound.
 */
export type RangeEnd = KeyString | undefined;

/** Maps a request's range_end bytes to a RangeEnd (etcd's mkGteRange: "\0" means "to the end"). */
export function rangeEndOf(rangeEnd: Uint8Array | undefined): RangeEnd {
  if (rangeEnd === undefined || rangeEnd.length === 0) return undefined;
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return '';
  return keyString(rangeEnd);
}

/** The result of an index range read (mvcc.RangeResult). */
export interface IndexRange {
  readonly kvs: KeyValue[];
  /** Live keys in the range at the read revision, regardless of limit. */
  readonly count: number;
  /** The view's revision (the header revision of a Range response). */
  readonly rev: number;
}

/** A consistent view to read from (mvcc.ReadView): the store between writes, or a write txn so far. */
export interface ReadView {
  /** Revision this view reads at by default, and reports in headers. */
  readonly rev: number;
  /** The compacted revision; -1 before the first compaction (mvcc FirstRev). */
  readonly compactRev: number;
  /**
   * Keys in [key, end) visible at `atRev` (<= 0: the view's revision), at most `limit` of them (0: all),
   * none when `countOnly`. Errors: atRev above the view (ErrFutureRev) or below compaction (ErrCompacted).
   */
  range(key: KeyString, end: RangeEnd, atRev: number, limit: number, countOnly: boolean): IndexRange;
  /** One key's KeyValue at `atRev` (<= 0: the view's revision), with the same revision checks as range. */
  get(key: KeyString, atRev: number): KeyValue | undefined;
}

/** Called after every committed write txn with its revision and its events in sub-revision order. @public */
export type CommitListener = (rev: number, events: readonly Event[]) => void;

/** A store's full state, detached from the live store (what a follower receives as a snapshot). @public */
export interface StoreSnapshot {
  readonly currentRev: number;
  readonly compactRev: number;
  readonly keys: ReadonlyArray<{ readonly key: KeyString; readonly keyBytes: Uint8Array; readonly revs: readonly KeyValue[] }>;
  readonly log: ReadonlyArray<readonly Event[]>;
  readonly logStart: number;
}

export interface StorageOptions {
  /** The lessor's side of put/delete bookkeeping; without one, any put naming a lease fails. */
  readonly lessor?: LeaseHook | undefined;
  /** etcd >= 3.6 keeps a tombstone exactly at the compaction revision (see compat.ts). */
  readonly keepTombstoneAtCompactRev?: boolean | undefined;
}

/**
 * Revision index + revision log. `currentRev` starts at 1 and `compactRev` at -1, as in etcd's NewStore,
 * which is why the very first Compact(0) succeeds. The log holds every change from the compaction revision
 * on, so watchers can replay history without touching the index.
 *
 * The log is flat: the KeyValues themselves, in revision order, plus where each revision's run starts. A
 * KeyValue already says what its event is (a tombstone is a DELETE, anything else a PUT), so Event objects
 * and per-revision arrays are made only when someone reads them: a store keeps every change it ever
 * logged, and at a million puts each retained object per put costs more in garbage collection than the
 * B-tree insert itself.
 *
 * Compaction costs what it removes, not what the store holds. The log drops its compacted prefix by moving
 * a start offset and clearing what it passes (the arrays are trimmed only once the cleared part outweighs
 * the rest, so trimming too is paid for by what was removed), and only the keys that have a change in the
 * compacted span of the log are compacted in the index: every other key is already in the form the
 * compaction would leave (see compact()).
 */
export class Storage implements ReadView {
  /** The revision index, in byte order of keys (etcd's treeIndex). */
  index = new TreeIndex();
  currentRev = 1;
  compactRev = -1;
  /**
   * Every change of revisions logStart..currentRev, in revision then sub-revision order, from position
   * logAt[logHead] on. A change's position counts every change logged since the store began (or was
   * restored); it sits at log[position - logBase]. Entries before logAt[logHead] are compacted and cleared.
   */
  private log: (KeyValue | undefined)[] = [];
  /** Position in the log of the changes of `logBase`'s first entry (what trims have cut off the front). */
  private logBase = 0;
  /** logAt[logHead + i]: the position of the first change of revision logStart + i (one entry per revision). */
  private logAt: number[] = [];
  /** Where revision logStart is in logAt; entries before it are compacted. */
  private logHead = 0;
  /** The oldest revision the log holds. */
  private logStart = 2;
  /**
   * Whether every key's history older than logStart is already compacted, so a compaction need only visit
   * keys changed in the log (false after a restore, whose snapshot may say otherwise: one full walk fixes it).
   */
  private indexFollowsLog = true;
  readonly lessor: LeaseHook | undefined;
  readonly keepTombstoneAtCompactRev: boolean;
  private readonly listeners: CommitListener[] = [];
  /** Where this store's copies of keys and values live (its own, never shared with another store). */
  readonly bytes = new ByteSlab();
  /**
   * The revisions the index holds (tombstones included) and the bytes of their keys and values: the data
   * etcd's backend keeps. Commits add to them, compaction takes away what it drops (dbSizeInUse follows).
   */
  retainedRevisions = 0;
  retainedBytes = 0;
  /** What paged reads learned of the counts of the pages after them (page_counts.ts). */
  readonly pageCounts = new PageCounts();

  constructor(opts: StorageOptions = {}) {
    this.lessor = opts.lessor;
    this.keepTombstoneAtCompactRev = opts.keepTombstoneAtCompactRev ?? true;
  }

  get rev(): number {
    return this.currentRev;
  }

  range(key: KeyString, end: RangeEnd, atRev: number, limit: number, countOnly: boolean): IndexRange {
    return rangeIndex(this, this.currentRev, key, end, atRev, limit, countOnly);
  }

  get(key: KeyString, atRev: number): KeyValue | undefined {
    const rev = readRevision(this, this.currentRev, atRev); // checked even when the key is absent
    return this.index.getAt(key, rev);
  }

  /** Starts a write transaction (mvcc.TxnWrite); its changes become visible to readers at end(). */
  write(): WriteTxn {
    return new WriteTxn(this);
  }

  /**
   * A lone put as its own write txn, without the txn bookkeeping: the hot path of the KV API's Put.
   * Same result as write() + put() + end().
   */
  putOne(key: KeyString, keyBytes: Uint8Array, value: Uint8Array, lease: bigint): number {
    const rev = this.currentRev + 1;
    const kv = writePut(this, rev, key, keyBytes, value, lease);
    this.currentRev = rev;
    this.logAt.push(this.logBase + this.log.length);
    this.log.push(kv);
    this.retainedRevisions++;
    this.retainedBytes += keyBytes.byteLength + value.byteLength;
    if (this.listeners.length > 0) {
      const events = [toEvent(kv)];
      for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!(rev, events);
    }
    return rev;
  }

  /** Subscribes to committed changes (the watchable store's notify hook). Returns an unsubscribe. */
  subscribe(listener: CommitListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Events of one main revision (empty if it was compacted away or never existed); a fresh array. */
  eventsAt(rev: number): Event[] {
    const events: Event[] = [];
    const i = rev - this.logStart;
    if (i < 0 || i >= this.logAt.length - this.logHead) return events;
    const [start, end] = this.logSpan(rev, rev);
    for (let j = start; j < end; j++) events.push(toEvent(this.log[j]!));
    return events;
  }

  /**
   * Where in `log` (array indexes, [start, end)) the changes of revisions from..to are, both clamped to
   * the logged revisions logStart..currentRev.
   */
  private logSpan(from: number, to: number): [number, number] {
    const logAt = this.logAt;
    const head = this.logHead;
    const count = logAt.length - head;
    const lo = Math.max(from - this.logStart, 0);
    const hi = Math.min(to - this.logStart + 1, count);
    if (lo >= hi) return [0, 0];
    const base = this.logBase;
    const end = head + hi < logAt.length ? logAt[head + hi]! - base : this.log.length;
    return [logAt[head + lo]! - base, end];
  }

  /** Records a committed txn's changes (in sub-revision order); called by WriteTxn.end(). */
  commit(rev: number, changes: readonly KeyValue[]): void {
    this.currentRev = rev;
    this.logAt.push(this.logBase + this.log.length);
    for (const kv of changes) {
      this.log.push(kv);
      this.retainedBytes += kv.key.byteLength + kv.value.byteLength;
    }
    this.retainedRevisions += changes.length;
    for (let sub = 1; sub < changes.length; sub++) setSubRevision(changes[sub]!, sub);
    if (this.listeners.length === 0) return;
    const events = changes.map(toEvent);
    for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!(rev, events);
  }

  /**
   * Compacts the index and log at `rev` (etcd's Compact + scheduleCompaction, done at once: a single-node
   * in-memory store has no reason to defer the physical part).
   *
   * Which keys the index compaction must visit: after the compaction at the previous point p, every key
   * holds at most one revision <= p (the one a read at p sees, or a tombstone exactly at p that the 3.6 rule
   * kept), and the log holds every change from p on. A compaction at `rev` changes a key only if the key
   * has a change in p..rev — a newer revision that makes the older one go, or a tombstone that goes — so
   * the keys of those log entries are all it needs to visit. When they are about as many as the keys of
   * the whole index, one walk of the index is cheaper than looking each of them up.
   */
  compact(rev: number): void {
    if (rev <= this.compactRev) fail(ErrCompacted);
    if (rev > this.currentRev) fail(ErrFutureRev);
    this.compactRev = rev;
    const keep = this.keepTombstoneAtCompactRev;
    const [start, end] = this.logSpan(this.logStart, rev);
    const dropped: Tally = { revisions: 0, bytes: 0 };
    if (this.indexFollowsLog && (end - start) * LOOKUP_COST_IN_WALKED_KEYS < this.index.size) {
      // A key's revisions share one keyBytes object, so this drops most repeats before any lookup.
      const seen = new Set<Uint8Array>();
      const keys: KeyString[] = [];
      for (let j = start; j < end; j++) {
        const bytes = this.log[j]!.key;
        if (seen.has(bytes)) continue;
        seen.add(bytes);
        keys.push(keyString(bytes));
      }
      this.index.compactKeys(keys, rev, keep, dropped);
    } else {
      this.index.compact(rev, keep, dropped);
      this.indexFollowsLog = true;
    }
    this.retainedRevisions -= dropped.revisions;
    this.retainedBytes -= dropped.bytes;
    this.compactLog(rev, keep);
  }

  /** Drops the log's revisions below `rev` (and, by the pre-3.6 rule, the tombstones at `rev`). */
  private compactLog(rev: number, keepTombstoneAtRev: boolean): void {
    const drop = Math.min(rev - this.logStart, this.logAt.length - this.logHead);
    if (drop > 0) {
      const [start, end] = this.logSpan(this.logStart, rev - 1);
      this.log.fill(undefined, start, end); // what is compacted away may be freed
      this.logHead += drop;
      this.logStart = rev;
    }
    // After the drop, the changes of `rev` (if logged) are the log's first revision.
    if (rev === this.logStart && this.logHead < this.logAt.length) {
      // etcd's backend deletes every revision up to `rev` that the index compaction did not keep. Before
      // etcd 3.6 that was every tombstone at exactly the compaction revision, so a watch from that revision
      // no longer saw the delete. Since then it keeps them, except a tombstone whose key the index knows
      // nothing of up to `rev`: a lone tombstone that a rebuild before etcd PR #19188 left out
      // (restoreLoneTombstone), whose keyIndex, if any, starts with a later put.
      // The run of `rev` is the first one left, so its kept changes move to the run's end, in order, and
      // the run now starts later: nothing after it moves.
      const [start, end] = this.logSpan(rev, rev);
      const log = this.log;
      const index = this.index;
      let to = end;
      for (let j = end - 1; j >= start; j--) {
        const kv = log[j]!;
        if (!isTombstone(kv) || (keepTombstoneAtRev && (index.oldestModRevision(keyString(kv.key)) ?? Infinity) <= rev)) log[--to] = kv;
      }
      if (to > start) {
        log.fill(undefined, start, to);
        this.logAt[this.logHead]! += to - start;
      }
    }
    this.trimLog();
  }

  /**
   * Cuts the compacted front off `log` and `logAt` once it is at least as long as what is left, so a trim
   * copies no more entries than the compactions since the last one removed.
   */
  private trimLog(): void {
    const head = this.logHead;
    if (head > 0 && head >= this.logAt.length - head) {
      this.logAt = this.logAt.slice(head);
      this.logHead = 0;
    }
    const cut = this.logAt.length > 0 ? this.logAt[0]! - this.logBase : this.log.length;
    if (cut > 0 && cut >= this.log.length - cut) {
      this.log = this.log.slice(cut);
      this.logBase += cut;
    }
  }

  /** A deep, detached copy of the state (KeyValues are immutable and shared). */
  snapshot(): StoreSnapshot {
    const { keys } = this.indexSnapshot();
    const log: Event[][] = [];
    for (let i = 0; i < this.logAt.length - this.logHead; i++) log.push(this.eventsAt(this.logStart + i));
    return { currentRev: this.currentRev, compactRev: this.compactRev, keys, log, logStart: this.logStart };
  }

  /**
   * The index part of snapshot(): every key's retained revisions and the compaction point, without the log
   * (what etcd's key bucket holds; a snapshot in etcd's format needs no Event per revision).
   */
  indexSnapshot(): Pick<StoreSnapshot, 'keys' | 'compactRev'> {
    const keys: { key: KeyString; keyBytes: Uint8Array; revs: KeyValue[] }[] = [];
    this.index.forEachRevs((key, keyBytes, revs) => {
      keys.push({ key, keyBytes, revs });
    });
    return { keys, compactRev: this.compactRev };
  }

  /**
   * Replaces the state with a snapshot (etcd's store.Restore). The current revision never goes below the
   * compaction revision (etcd issue #6567 / PR #6633).
   */
  restore(snap: StoreSnapshot): void {
    this.index = new TreeIndex(snap.keys.map((k) => new KeyIndex(k.key, k.keyBytes, k.revs)));
    this.compactRev = snap.compactRev;
    this.currentRev = Math.max(snap.currentRev, snap.compactRev);
    this.log = [];
    this.logBase = 0;
    this.logAt = [];
    this.logHead = 0;
    for (const events of snap.log) {
      this.logAt.push(this.log.length);
      for (const ev of events) this.log.push(ev.kv);
    }
    this.logStart = snap.logStart;
    this.indexFollowsLog = false;
    this.pageCounts.clear();
    this.recountRetained();
  }

  /** Counts what the index retains, walking all of it. */
  private recountRetained(): void {
    const held = retainedOf(this.index);
    this.retainedRevisions = held.revisions;
    this.retainedBytes = held.bytes;
  }
}

/** What the index retains: every key's revisions, counted by a walk of all of it. */
export function retainedOf(index: TreeIndex): Tally {
  const t: Tally = { revisions: 0, bytes: 0 };
  index.forEachRevs((_key, _keyBytes, revs) => {
    for (const kv of revs) count(t, kv);
  });
  return t;
}

/**
 * What one index lookup of a logged change costs, in keys visited by a walk of the whole index (about 2 from
 * 2.5k to 500k keys, measured on Node 20): a compaction looks up the changes it compacts while that is
 * cheaper than the walk, and walks the index otherwise. The result is the same either way.
 */
const LOOKUP_COST_IN_WALKED_KEYS = 2;

/** The event a logged change stands for: a tombstone is a DELETE, any other KeyValue a PUT. */
function toEvent(kv: KeyValue): Event {
  return { type: isTombstone(kv) ? 'DELETE' : 'PUT', kv };
}

/** Checks a read revision against a view (mvcc rangeKeys) and resolves <= 0 to the view's revision. */
function readRevision(s: Storage, viewRev: number, atRev: number): number {
  if (atRev > viewRev) fail(ErrFutureRev);
  const rev = atRev <= 0 ? viewRev : atRev;
  if (rev < s.compactRev) fail(ErrCompacted);
  return rev;
}

/** Calls `visit` for every key in [key, end) that is live at `rev`, in byte order. */
function scan(s: Storage, key: KeyString, end: RangeEnd, rev: number, visit: (ki: KeyIndex, kv: KeyValue) => void): void {
  if (end === undefined) {
    const ki = s.index.getForWrite(key);
    const kv = ki?.get(rev);
    if (kv !== undefined) visit(ki!, kv);
    return;
  }
  const high = spanHigh(s, key, end);
  if (high === undefined) return;
  s.index.forRangeForWrite(key, high, end === '', (_k, ki) => {
    const kv = ki.get(rev);
    if (kv !== undefined) visit(ki, kv);
  });
}

/**
 * The upper bound of the keys [key, end) names, for the index's forRange: `end` itself, or the greatest key
 * (inclusive) when `end` is '' (to the end of the keyspace); undefined when no key can match.
 */
function spanHigh(s: Storage, key: KeyString, end: KeyString): KeyString | undefined {
  if (end === '') return s.index.maxKey();
  return end > key ? end : undefined;
}

/** mvcc rangeKeys over the index, for a view whose revision is `viewRev`. */
function rangeIndex(
  s: Storage,
  viewRev: number,
  key: KeyString,
  end: RangeEnd,
  atRev: number,
  limit: number,
  countOnly: boolean,
): IndexRange {
  const rev = readRevision(s, viewRev, atRev);
  const kvs: KeyValue[] = [];
  const max = countOnly ? 0 : limit > 0 ? limit : Infinity;
  let count = 0;
  if (end === undefined) {
    const kv = s.index.getAt(key, rev);
    if (kv !== undefined) {
      if (max > 0) kvs.push(kv);
      count = 1;
    }
    return { kvs, count, rev: viewRev };
  }
  const high = spanHigh(s, key, end);
  if (high === undefined) return { kvs, count, rev: viewRev };
  if (max === Infinity || max === 0) {
    s.index.forRangeAt(key, high, end === '', rev, (kv) => {
      if (count < max) kvs.push(kv);
      count++;
      return false;
    });
    return { kvs, count, rev: viewRev };
  }
  // A limited read: the count from a page before (page_counts.ts), or the walk of every key to the end.
  const known = s.pageCounts.countFrom(rev, end, key);
  let before: KeyString | undefined;
  let last: KeyString | undefined;
  s.index.forRangeAt(key, high, end === '', rev, (kv, k) => {
    if (count < max) {
      kvs.push(kv);
      before = last;
      last = k;
    }
    count++;
    return known !== undefined && count === max;
  });
  if (known !== undefined) count = known;
  if (last !== undefined && rev <= s.currentRev) s.pageCounts.note(rev, end, key, before, last, count - kvs.length + 1);
  return { kvs, count, rev: viewRev };
}

/**
 * The change a put makes at revision `rev` (storeTxnWrite.put): a new KeyValue carrying the generation's
 * create revision and the next version, appended to the key's index, and the lease moved if it changed.
 */
function writePut(s: Storage, rev: number, key: KeyString, keyBytes: Uint8Array, value: Uint8Array, lease: bigint): KeyValue {
  // One lookup either way: a key that exists gets its next revision; a new key one B-tree descent, and its
  // slot then holds its KeyValue directly.
  const ki = s.index.getForWrite(key);
  if (ki === undefined) {
    const first = s.bytes.firstKeyValue(keyBytes, value, rev, lease);
    s.index.setFirst(s.index.insertAbsent(key), first);
    if (lease !== 0n && s.lessor !== undefined) s.lessor.attach(lease, first.key);
    return first;
  }
  const prev = ki.current();
  const kv: KeyValue = {
    key: ki.keyBytes,
    createRevision: prev === undefined ? rev : prev.createRevision,
    modRevision: rev,
    version: prev === undefined ? 1 : prev.version + 1,
    value: s.bytes.copy(value),
    lease,
  };
  ki.append(kv);
  const oldLease = prev === undefined ? 0n : prev.lease;
  if (oldLease !== lease && s.lessor !== undefined) {
    if (oldLease !== 0n) s.lessor.detach(oldLease, ki.keyBytes);
    if (lease !== 0n) s.lessor.attach(lease, ki.keyBytes);
  }
  return kv;
}

/**
 * A write transaction (mvcc storeTxnWrite): every change gets main revision beginRev+1 and the next
 * sub-revision; reads see the txn's own earlier changes; the store's revision moves only if something
 * changed.
 */
export class WriteTxn implements ReadView {
  readonly beginRev: number;
  /** This txn's changes in sub-revision order; tombstones are its deletes. */
  readonly changes: KeyValue[] = [];
  private ended = false;

  constructor(private readonly s: Storage) {
    this.beginRev = s.currentRev;
  }

  get rev(): number {
    return this.changes.length > 0 ? this.beginRev + 1 : this.beginRev;
  }

  get compactRev(): number {
    return this.s.compactRev;
  }

  range(key: KeyString, end: RangeEnd, atRev: number, limit: number, countOnly: boolean): IndexRange {
    return rangeIndex(this.s, this.rev, key, end, atRev, limit, countOnly);
  }

  get(key: KeyString, atRev: number): KeyValue | undefined {
    const rev = readRevision(this.s, this.rev, atRev); // checked even when the key is absent
    return this.s.index.getAt(key, rev);
  }

  /** Writes `value` under `key` (storeTxnWrite.put); returns the revision of the change. */
  put(key: KeyString, keyBytes: Uint8Array, value: Uint8Array, lease: bigint): number {
    const rev = this.beginRev + 1;
    this.changes.push(writePut(this.s, rev, key, keyBytes, value, lease));
    return rev;
  }

  /** Deletes every live key in [key, end) (storeTxnWrite.DeleteRange); returns how many, and the revision. */
  deleteRange(key: KeyString, end: RangeEnd): { deleted: number; rev: number } {
    const s = this.s;
    const rev = this.beginRev + 1;
    let deleted = 0;
    // Tombstoning a key changes only its own keyIndex, never the tree's shape, so it is safe mid-scan.
    scan(s, key, end, this.rev, (ki, live) => {
      const tomb: KeyValue = { key: ki.keyBytes, createRevision: 0, modRevision: rev, version: 0, value: EMPTY_BYTES, lease: 0n };
      ki.append(tomb);
      this.changes.push(tomb);
      if (live.lease !== 0n && s.lessor !== undefined) s.lessor.detach(live.lease, ki.keyBytes);
      deleted++;
    });
    return { deleted, rev: this.rev };
  }

  /**
   * Undoes every change of this txn, newest first, leases included. etcd never needs this (an op that
   * fails mid-txn stops the server); the simulator uses it to keep "a rejected request changes nothing"
   * for the one failure its pre-checks cannot see: an ignore_value/ignore_lease put of a key that an
   * earlier op of the same txn deleted.
   */
  rollback(): void {
    const s = this.s;
    for (let i = this.changes.length - 1; i >= 0; i--) {
      const kv = this.changes[i]!;
      const key = keyString(kv.key);
      const ki = s.index.getForWrite(key)!;
      ki.pop();
      if (isTombstone(kv)) {
        const live = ki.current()!;
        if (live.lease !== 0n) s.lessor?.attach(live.lease, ki.keyBytes);
        continue;
      }
      const prev = ki.current();
      const oldLease = prev === undefined ? 0n : prev.lease;
      if (oldLease !== kv.lease && s.lessor !== undefined) {
        if (kv.lease !== 0n) s.lessor.detach(kv.lease, ki.keyBytes);
        if (oldLease !== 0n) s.lessor.attach(oldLease, ki.keyBytes);
      }
      if (ki.isEmpty()) s.index.delete(key);
    }
    this.changes.length = 0;
    this.ended = true;
  }

  /** Commits (storeTxnWrite.End): the revision moves and watchers are notified only if something changed. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.changes.length > 0) this.s.commit(this.beginRev + 1, this.changes);
  }
}

/** Whether a KeyValue marks a delete (re-exported for layers above that only see KeyValues). */
export { isTombstone };
