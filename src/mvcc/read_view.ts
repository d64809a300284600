/**
 * Reading the store (etcd server/storage/mvcc/kvstore_txn.go, rangeKeys): a consistent view, the revision
 * checks of a read and the index walk of a range, shared by the store between writes (store.ts) and a write
 * txn reading its own changes (write_txn.ts).
 */
import { keyString, type KeyString } from './bytes.js';
import { ErrCompacted, ErrFutureRev } from './errors.js';
import { fail } from '../etcd/index.js';
import type { Storage } from './store.js';
import type { KeyValue } from './types.js';

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
  /** One key's KeyValue at the view's revision, by the key's bytes (no revision to check, no string made). */
  getCurrent(key: Uint8Array): KeyValue | undefined;
}


/** Checks a read revision against a view (mvcc rangeKeys) and resolves <= 0 to the view's revision. */
export function readRevision(s: Storage, viewRev: number, atRev: number): number {
  if (atRev > viewRev) fail(ErrFutureRev);
  const rev = atRev <= 0 ? viewRev : atRev;
  if (rev < s.compactRev) fail(ErrCompacted);
  return rev;
}


/**
 * The upper bound of the keys [key, end) names, for the index's forRange: `end` itself, or the greatest key
 * (inclusive) when `end` is '' (to the end of the keyspace); undefined when no key can match.
 */
export function spanHigh(s: Storage, key: KeyString, end: KeyString): KeyString | undefined {
  if (end === '') return s.index.maxKey();
  return end > key ? end : undefined;
}


/** mvcc rangeKeys over the index, for a view whose revision is `viewRev`. */
export function rangeIndex(
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

