/**
 * keyIndex (etcd server/storage/mvcc/key_index.go): the revision history of one key. etcd keeps it as
 * generations — one "life" of the key each, from its creation to the delete whose tombstone ends it.
 * A tombstone already marks where a generation ends, so we keep one list of revisions in revision order
 * and derive the generations when asked: a put appends, a delete appends its tombstone, and the key is
 * live exactly when the newest entry is not a tombstone.
 *
 * Each revision is a record of the store's History (history.ts: its revisions, value and lease in columns;
 * etcd keeps revisions here and values in the backend), so a historical read is one binary search and the
 * index holds numbers, not objects. The newest revision sits in a field of its own and only the older ones
 * in an array, created at a key's second revision: most keys of a large store have one revision.
 *
 * Compaction drops revisions from the front of that array. It does not copy what stays: it moves a start
 * offset and clears what it passes, and trims the array only once the dropped part outweighs the kept one,
 * so a compaction that removes a few revisions of a long history costs a few steps, not the history.
 */
import type { KeyString } from './bytes.js';
import { NO_RECORD, type History, type Rec } from './history.js';
import type { KeyValue } from './types.js';

/** A count of revisions and their key and value bytes (what the store retains, or what a compaction drops). */
export interface Tally {
  revisions: number;
  bytes: number;
}

/** Counts `kv` into `t`. */
export function count(t: Tally, kv: KeyValue): void {
  t.revisions++;
  t.bytes += kv.key.byteLength + kv.value.byteLength;
}

/** Counts record `r` into `t` and lets the keyIndex's hold on it go (a compaction dropped it). */
function drop(t: Tally, h: History, r: Rec): void {
  t.revisions++;
  t.bytes += h.bytes(r);
  h.release(r);
}

/** One life of a key: its KeyValues in revision order; a tombstone (createRevision 0) may end it. */
export type Generation = KeyValue[];

/** A tombstone marks a delete: etcd stores it with no value, create revision 0 and version 0. */
export function isTombstone(kv: KeyValue): boolean {
  return kv.createRevision === 0;
}

/**
 * Whether record `r`, a key's newest revision at or below the compaction revision `atRev`, goes with the
 * compaction (a put stays: it is what a read at atRev sees): a tombstone below atRev does, and one exactly
 * at atRev only by the pre-3.6 rule (`keepTombstoneAtRev` false).
 */
function compactsAway(h: History, r: Rec, atRev: number, keepTombstoneAtRev: boolean): boolean {
  return h.isTombstone(r) && (h.modRevision(r) < atRev || !keepTombstoneAtRev);
}


/**
 * What a read sees of a keyIndex: its revisions, generations and the value at a revision, never a way to
 * change it. Read-only walks of the index hand these out, built on the spot for a key the index keeps in its
 * single-revision form, so reading never makes the index bigger (tree_index.ts).
 */
export type ReadonlyKeyIndex = Pick<KeyIndex, 'key' | 'keyBytes' | 'revs' | 'generations' | 'isEmpty' | 'current' | 'checkValid'>;

export class KeyIndex {
  /** The key as raw bytes, shared by every revision of this key (one copy per key, not per revision). */
  readonly keyBytes: Uint8Array;
  readonly key: KeyString;
  private readonly h: History;
  /** The newest stored revision; NO_RECORD only while nothing is stored (empty, or all rolled back). */
  private newest: Rec;
  /**
   * The revisions before `newest`, oldest first, from index `dead` on; undefined while there are none.
   * Entries before `dead` were compacted away and are cleared (NO_RECORD), waiting for a trim.
   */
  private older: Rec[] | undefined;
  /** How many entries at the front of `older` compaction dropped (always less than older.length). */
  private dead = 0;

  /** A keyIndex holding the records `revs` of `h` (oldest first). */
  constructor(h: History, key: KeyString, keyBytes: Uint8Array, revs: readonly Rec[]) {
    this.h = h;
    this.key = key;
    this.keyBytes = keyBytes;
    this.newest = revs.length > 0 ? revs[revs.length - 1]! : NO_RECORD;
    this.older = revs.length > 1 ? revs.slice(0, -1) : undefined;
  }

  /** Every stored revision's record, oldest first (a fresh array). Empty: nothing left (remove the key). */
  records(): Rec[] {
    if (this.newest === NO_RECORD) return [];
    const older = this.older;
    if (older === undefined) return [this.newest];
    const out = older.slice(this.dead);
    out.push(this.newest);
    return out;
  }

  /** Every stored revision, oldest first (fresh KeyValues). Empty: nothing left (remove the key). */
  get revs(): KeyValue[] {
    return this.records().map((r) => this.h.kv(r));
  }

  /** The oldest stored revision's mod revision (undefined when none is left). */
  oldestModRevision(): number | undefined {
    const older = this.older;
    const r = older === undefined ? this.newest : older[this.dead]!;
    return r === NO_RECORD ? undefined : this.h.modRevision(r);
  }

  /** Whether no revision is left. */
  isEmpty(): boolean {
    return this.newest === NO_RECORD;
  }

  /** etcd's generations, derived: the last one is the current generation, empty while the key is deleted. */
  get generations(): Generation[] {
    const gens: Generation[] = [[]];
    for (const kv of this.revs) {
      gens[gens.length - 1]!.push(kv);
      if (isTombstone(kv)) gens.push([]);
    }
    return gens;
  }

  /** The record of the live revision at the newest revision, or NO_RECORD (-1) when the key is deleted. */
  currentRec(): Rec {
    const last = this.newest;
    return last === NO_RECORD || this.h.isTombstone(last) ? NO_RECORD : last;
  }

  /** The live KeyValue at the newest revision, or undefined when the key is deleted. */
  current(): KeyValue | undefined {
    const r = this.currentRec();
    return r === NO_RECORD ? undefined : this.h.kv(r);
  }

  /** Appends a put or a tombstone (the caller guarantees revisions only grow, and deletes only live keys). */
  append(r: Rec): void {
    const before = this.newest;
    if (before !== NO_RECORD) {
      this.h.superseded(before);
      if (this.older === undefined) this.older = [before];
      else this.older.push(before);
    }
    this.newest = r;
  }

  /** Removes the newest revision (undoing an append) and returns its record, which the caller now owns. */
  pop(): Rec {
    const r = this.newest;
    const older = this.older;
    this.newest = older === undefined ? NO_RECORD : older.pop()!;
    if (older !== undefined && older.length === this.dead) {
      this.older = undefined;
      this.dead = 0;
    }
    return r;
  }

  /**
   * The record visible at `atRev`, or NO_RECORD (-1) if the key did not exist then (never created, deleted, or
   * between generations). Mirrors keyIndex.get.
   */
  getRec(atRev: number): Rec {
    const h = this.h;
    const newest = this.newest;
    let r = NO_RECORD;
    if (newest === NO_RECORD || h.modRevision(newest) <= atRev) r = newest;
    else if (this.older !== undefined) {
      const i = floor(h, this.older, this.dead, atRev);
      if (i >= 0) r = this.older[i]!; // NO_RECORD when compacted
    }
    return r === NO_RECORD || h.isTombstone(r) ? NO_RECORD : r;
  }

  /**
   * etcd's compaction keep rule at `atRev`: generations that ended before atRev go; in the first one left,
   * the newest revision <= atRev and everything after it stay. Since etcd PR #18274 (v3.6, issue #18089; backported to 3.5.16 and 3.4.34) a
   * generation whose tombstone is exactly atRev is kept, so a watch from atRev still sees the delete;
   * `keepTombstoneAtRev = false` reproduces the older rule. Returns true when nothing is left and the key
   * should leave the index. What it drops is counted into `dropped` and let go.
   */
  compact(atRev: number, keepTombstoneAtRev: boolean, dropped: Tally): boolean {
    const h = this.h;
    const newest = this.newest;
    if (newest === NO_RECORD) return true;
    const older = this.older;
    const dead = this.dead;
    const n = older === undefined ? 0 : older.length; // index of `newest` in the full list
    const i = h.modRevision(newest) <= atRev ? n : older === undefined ? -1 : floor(h, older, dead, atRev);
    if (i < dead) return false;
    const r = i === n ? newest : older![i]!;
    const keepFrom = compactsAway(h, r, atRev, keepTombstoneAtRev) ? i + 1 : i;
    for (let j = dead, end = Math.min(keepFrom, n); j < end; j++) drop(dropped, h, older![j]!);
    if (keepFrom > n) {
      drop(dropped, h, newest);
      this.newest = NO_RECORD;
      this.older = undefined;
      this.dead = 0;
    } else if (keepFrom === n) {
      this.older = undefined;
      this.dead = 0;
    } else if (keepFrom > dead) {
      // Clear what goes, without moving what stays; trim the array once the cleared part is the bigger
      // one, so copies cost no more than the compactions before them removed.
      const live = n - keepFrom;
      if (keepFrom >= live) {
        this.older = older!.slice(keepFrom);
        this.dead = 0;
      } else {
        older!.fill(NO_RECORD, dead, keepFrom);
        this.dead = keepFrom;
      }
    }
    return this.newest === NO_RECORD;
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** Structural invariants of a keyIndex; returns a description of the first violation, if any. */
  checkValid(): string | undefined {
    const name = JSON.stringify(this.key);
    const revs = this.revs;
    if (revs.length === 0) return `${name}: no revisions left in the index`;
    if (this.older !== undefined && this.older.length <= this.dead) return `${name}: an empty list of older revisions`;
    for (let i = 0; i < this.dead; i++) if (this.older![i] !== NO_RECORD) return `${name}: a compacted revision left in place`;
    let prev = 0;
    let genStart: KeyValue | undefined;
    let before: KeyValue | undefined;
    for (const kv of revs) {
      // Equal main revisions are legal: a txn may put and delete one key (etcd's "\0" delete quirk), at two
      // sub-revisions of the same main revision.
      if (kv.modRevision < prev) return `${name}: revisions going backwards at ${kv.modRevision}`;
      prev = kv.modRevision;
      if (kv.key !== this.keyBytes) return `${name}: key bytes not shared at ${kv.modRevision}`;
      if (isTombstone(kv)) {
        genStart = undefined;
        before = undefined;
        continue;
      }
      genStart ??= kv;
      if (kv.createRevision !== genStart.createRevision) return `${name}: create revision differs inside a generation at ${kv.modRevision}`;
      if (before !== undefined && kv.version !== before.version + 1) return `${name}: version does not count up at ${kv.modRevision}`;
      before = kv;
    }
    return undefined;
  }
  // Stryker restore all
}

/**
 * Index of the newest entry of `revs[from..]` whose record has modRevision <= atRev, or from - 1 (the entries
 * before `from` are cleared).
 */
function floor(h: History, revs: readonly Rec[], from: number, atRev: number): number {
  let hi = revs.length - 1;
  if (hi < from || h.modRevision(revs[hi]!) <= atRev) return hi;
  let lo = from - 1; // revs[lo] <= atRev < revs[hi], with revs[from - 1] = -infinity
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (h.modRevision(revs[mid]!) <= atRev) lo = mid;
    else hi = mid;
  }
  return lo;
}
