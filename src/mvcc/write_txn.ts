/**
 * A write transaction (etcd server/storage/mvcc/kvstore_txn.go, storeTxnWrite): its changes take one main
 * revision and number themselves with sub-revisions; a put appends a record to the key's history and moves
 * the key's lease; a delete appends tombstones. The store (store.ts) commits what it wrote.
 */
import { EMPTY_BYTES, keyString, type KeyString } from './bytes.js';
import { NO_RECORD, type Rec } from './history.js';
import type { KeyIndex } from './key_index.js';
import { rangeIndex, readRevision, spanHigh, type IndexRange, type RangeEnd, type ReadView } from './read_view.js';
import type { Storage } from './store.js';
import type { KeyValue } from './types.js';


/** Calls `visit` for every key in [key, end) that is live at `rev`, in byte order, with its record there. */
function scan(s: Storage, key: KeyString, end: RangeEnd, rev: number, visit: (ki: KeyIndex, live: Rec) => void): void {
  if (end === undefined) {
    const ki = s.index.getForWrite(key);
    const r = ki === undefined ? NO_RECORD : ki.getRec(rev);
    if (r !== NO_RECORD) visit(ki!, r);
    return;
  }
  const high = spanHigh(s, key, end);
  if (high === undefined) return;
  s.index.forRangeForWrite(key, high, end === '', (_k, ki) => {
    const r = ki.getRec(rev);
    if (r !== NO_RECORD) visit(ki, r);
  });
}


/**
 * The change a put makes at revision `rev` (storeTxnWrite.put): a new record carrying the generation's
 * create revision and the next version, appended to the key's index, and the lease moved if it changed.
 * The key is looked up by its bytes; its string form is made only for a new key (the B-tree's).
 */
export function writePut(s: Storage, rev: number, keyBytes: Uint8Array, value: Uint8Array, lease: bigint): Rec {
  const h = s.history;
  // One lookup either way: a key that exists gets its next revision; a new key one B-tree descent, and its
  // slot then holds its record directly.
  const ki = s.index.getForWriteBytes(keyBytes);
  if (ki === undefined) {
    const own = s.keyBytes.copy(keyBytes);
    const first = h.add(own, rev, rev, 1, value, lease);
    s.index.setFirst(s.index.insertAbsent(keyString(own), own), first);
    if (lease !== 0n && s.lessor !== undefined) s.lessor.attach(lease, own);
    return first;
  }
  const prev = ki.currentRec();
  const live = prev !== NO_RECORD;
  const r = h.add(ki.keyBytes, live ? h.createRevision(prev) : rev, rev, live ? h.version(prev) + 1 : 1, value, lease);
  ki.append(r);
  const oldLease = live ? h.lease(prev) : 0n;
  if (oldLease !== lease && s.lessor !== undefined) {
    if (oldLease !== 0n) s.lessor.detach(oldLease, ki.keyBytes);
    if (lease !== 0n) s.lessor.attach(lease, ki.keyBytes);
  }
  return r;
}


/**
 * A write transaction (mvcc storeTxnWrite): every change gets main revision beginRev+1 and the next
 * sub-revision; reads see the txn's own earlier changes; the store's revision moves only if something
 * changed.
 */
export class WriteTxn implements ReadView {
  readonly beginRev: number;
  /** This txn's changes' records in sub-revision order; tombstones are its deletes. */
  readonly changes: Rec[] = [];
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

  getCurrent(key: Uint8Array): KeyValue | undefined {
    return this.s.index.getAtBytes(key, this.rev);
  }

  /** Writes `value` under the key `keyBytes` (storeTxnWrite.put); returns the revision of the change. */
  put(keyBytes: Uint8Array, value: Uint8Array, lease: bigint): number {
    const rev = this.beginRev + 1;
    this.changes.push(writePut(this.s, rev, keyBytes, value, lease));
    return rev;
  }

  /** Deletes every live key in [key, end) (storeTxnWrite.DeleteRange); returns how many, and the revision. */
  deleteRange(key: KeyString, end: RangeEnd): { deleted: number; rev: number } {
    const s = this.s;
    const rev = this.beginRev + 1;
    let deleted = 0;
    // Tombstoning a key changes only its own keyIndex, never the tree's shape, so it is safe mid-scan.
    scan(s, key, end, this.rev, (ki, live) => {
      const tomb = s.history.add(ki.keyBytes, 0, rev, 0, EMPTY_BYTES, 0n);
      ki.append(tomb);
      this.changes.push(tomb);
      const lease = s.history.lease(live);
      if (lease !== 0n && s.lessor !== undefined) s.lessor.detach(lease, ki.keyBytes);
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
    const h = s.history;
    for (let i = this.changes.length - 1; i >= 0; i--) {
      const r = this.changes[i]!;
      const key = keyString(h.key(r));
      const ki = s.index.getForWrite(key)!;
      ki.pop();
      const lease = h.lease(r);
      const tombstone = h.isTombstone(r);
      h.release(r);
      if (tombstone) {
        const live = h.lease(ki.currentRec());
        if (live !== 0n) s.lessor?.attach(live, ki.keyBytes);
        continue;
      }
      const prev = ki.currentRec();
      const oldLease = prev === NO_RECORD ? 0n : h.lease(prev);
      if (oldLease !== lease && s.lessor !== undefined) {
        if (lease !== 0n) s.lessor.detach(lease, ki.keyBytes);
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

