/**
 * keyIndex (etcd server/storage/mvcc/key_index.go): the revision history of one key. etcd keeps it as
 * generations — one "life" of the key each, from its creation to the delete whose tombstone ends it.
 * A tombstone already marks where a generation ends, so we keep one list of KeyValues in revision order
 * and derive the generations when asked: a put appends, a delete appends its tombstone, and the key is
 * live exactly when the newest entry is not a tombstone.
 *
 * We keep the KeyValue of every revision here (etcd keeps revisions here and values in the backend), so a
 * historical read is one binary search. The newest revision sits in a field of its own and only the older
 * ones in an array, created at a key's second revision: most keys of a large store have one revision, and
 * a read at the current revision — nearly every read — then goes straight from keyIndex to KeyValue.
 *
 * Compaction drops revisions from the front of that array. It does not copy what stays: it moves a start
 * offset and clears what it passes, and trims the array only once the dropped part outweighs the kept one,
 * so a compaction that removes a few revisions of a long history costs a few steps, not the history.
 */
import type { KeyString } from './bytes.js';
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

/** One life of a key: its KeyValues in revision order; a tombstone (createRevision 0) may end it. */
export type Generation = KeyValue[];

/** A tombstone marks a delete: etcd stores it with no value, create revision 0 and version 0. */
export function isTombstone(kv: KeyValue): boolean {
  return kv.createRevision === 0;
}

/**
 * Whether `kv`, a key's newest revision at or below the compaction revision `atRev`, goes with the
 * compaction (a put stays: it is what a read at atRev sees): a tombstone below atRev does, and one exactly
 * at atRev only by the pre-3.6 rule (`keepTombstoneAtRev` false).
 */
export function compactsAway(kv: KeyValue, atRev: number, keepTombstoneAtRev: boolean): boolean {
  return isTombstone(kv) && (kv.modRevision < atRev || !keepTombstoneAtRev);
}

/**
 * What a read sees of a keyIndex: its revisions, generations and the value at a revision, never a way to
 * change it. Read-only walks of the index hand these out, built on the spot for a key the index keeps in its
 * single-revision form, so reading never makes the index bigger (tree_index.ts).
 */
export type ReadonlyKeyIndex = Pick<KeyIndex, 'key' | 'keyBytes' | 'revs' | 'generations' | 'isEmpty' | 'current' | 'get' | 'checkValid'>;

export class KeyIndex {
  /** The key as raw bytes, shared by every KeyValue of this key (one copy per key, not per revision). */
  readonly keyBytes: Uint8Array;
  readonly key: KeyString;
  /** The newest stored revision; undefined only while nothing is stored (empty, or all rolled back). */
  private newest: KeyValue | undefined;
  /**
   * The revisions before `newest`, oldest first, from index `dead` on; undefined while there are none.
   * Entries before `dead` were compacted away and are cleared (undefined), waiting for a trim.
   */
  private older: (KeyValue | undefined)[] | undefined;
  /** How many entries at the front of `older` compaction dropped (always less than older.length). */
  private dead = 0;

  /** A keyIndex holding `revs` (oldest first). */
  constructor(key: KeyString, keyBytes: Uint8Array, revs: readonly KeyValue[]) {
    this.key = key;
    this.keyBytes = keyBytes;
    this.newest = revs[revs.length - 1];
    this.older = revs.length > 1 ? revs.slice(0, -1) : undefined;
  }

  /** Every stored revision, oldest first (a fresh array). Empty: nothing left (remove the key). */
  get revs(): KeyValue[] {
    if (this.newest === undefined) return [];
    const older = this.older;
    if (older === undefined) return [this.newest];
    const out = new Array<KeyValue>(older.length - this.dead + 1);
    let j = 0;
    for (let i = this.dead; i < older.length; i++) out[j++] = older[i]!;
    out[j] = this.newest;
    return out;
  }

  /** The oldest stored revision (undefined when none is left). */
  oldest(): KeyValue | undefined {
    const older = this.older;
    return older === undefined ? this.newest : older[this.dead];
  }

  /** Whether no revision is left. */
  isEmpty(): boolean {
    return this.newest === undefined;
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

  /** The live KeyValue at the newest revision, or undefined when the key is deleted. */
  current(): KeyValue | undefined {
    const last = this.newest;
    return last === undefined || isTombstone(last) ? undefined : last;
  }

  /** Appends a put or a tombstone (the caller guarantees revisions only grow, and deletes only live keys). */
  append(kv: KeyValue): void {
    const before = this.newest;
    if (before !== undefined) {
      if (this.older === undefined) this.older = [before];
      else this.older.push(before);
    }
    this.newest = kv;
  }

  /** Removes the newest revision (undoing an append). */
  pop(): void {
    const older = this.older;
    this.newest = older === undefined ? undefined : older.pop();
    if (older !== undefined && older.length === this.dead) {
      this.older = undefined;
      this.dead = 0;
    }
  }

  /**
   * The KeyValue visible at `atRev`, or undefined if the key did not exist then (never created, deleted,
   * or between generations). Mirrors keyIndex.get.
   */
  get(atRev: number): KeyValue | undefined {
    const newest = this.newest;
    let kv: KeyValue | undefined;
    if (newest === undefined || newest.modRevision <= atRev) kv = newest;
    else if (this.older !== undefined) kv = this.older[floor(this.older, this.dead, atRev)];
    return kv === undefined || isTombstone(kv) ? undefined : kv;
  }

  /**
   * etcd's compaction keep rule at `atRev`: generations that ended before atRev go; in the first one left,
   * the newest revision <= atRev and everything after it stay. Since etcd PR #18274 (v3.6, issue #18089; backported to 3.5.16 and 3.4.34) a
   * generation whose tombstone is exactly atRev is kept, so a watch from atRev still sees the delete;
   * `keepTombstoneAtRev = false` reproduces the older rule. Returns true when nothing is left and the key
   * should leave the index. What it drops is counted into `dropped`.
   */
  compact(atRev: number, keepTombstoneAtRev: boolean, dropped: Tally): boolean {
    const newest = this.newest;
    if (newest === undefined) return true;
    const older = this.older;
    const dead = this.dead;
    const n = older === undefined ? 0 : older.length; // index of `newest` in the full list
    const i = newest.modRevision <= atRev ? n : older === undefined ? -1 : floor(older, dead, atRev);
    if (i < dead) return false;
    const kv = i === n ? newest : older![i]!;
    const keepFrom = compactsAway(kv, atRev, keepTombstoneAtRev) ? i + 1 : i;
    for (let j = dead, end = Math.min(keepFrom, n); j < end; j++) count(dropped, older![j]!);
    if (keepFrom > n) count(dropped, newest);
    if (keepFrom > n) {
      this.newest = undefined;
      this.older = undefined;
      this.dead = 0;
    } else if (keepFrom === n) {
      this.older = undefined;
      this.dead = 0;
    } else if (keepFrom > dead) {
      // Clear what goes (its values may be freed), without moving what stays; trim the array once the
      // cleared part is the bigger one, so copies cost no more than the compactions before them removed.
      const live = n - keepFrom;
      if (keepFrom >= live) {
        this.older = older!.slice(keepFrom);
        this.dead = 0;
      } else {
        older!.fill(undefined, dead, keepFrom);
        this.dead = keepFrom;
      }
    }
    return this.newest === undefined;
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** Structural invariants of a keyIndex; returns a description of the first violation, if any. */
  checkValid(): string | undefined {
    const name = JSON.stringify(this.key);
    const revs = this.revs;
    if (revs.length === 0) return `${name}: no revisions left in the index`;
    if (this.older !== undefined && this.older.length <= this.dead) return `${name}: an empty list of older revisions`;
    for (let i = 0; i < this.dead; i++) if (this.older![i] !== undefined) return `${name}: a compacted revision left in place`;
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
 * Index of the newest entry of `revs[from..]` with modRevision <= atRev, or from - 1 (the entries before
 * `from` are cleared).
 */
function floor(revs: readonly (KeyValue | undefined)[], from: number, atRev: number): number {
  let hi = revs.length - 1;
  if (hi < from || revs[hi]!.modRevision <= atRev) return hi;
  let lo = from - 1; // revs[lo] <= atRev < revs[hi], with revs[from - 1] = -infinity
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (revs[mid]!.modRevision <= atRev) lo = mid;
    else hi = mid;
  }
  return lo;
}
