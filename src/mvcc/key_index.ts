/**
 * keyIndex (etcd server/storage/mvcc/key_index.go): the revision history of one key, as generations.
 * A generation is one "life" of the key: the puts from its creation to its delete, the delete's tombstone
 * last. The final generation is the current one and is empty while the key is deleted.
 *
 * We keep the KeyValue of every revision in the generation itself (etcd keeps revisions here and values in
 * the backend), so a historical read is one binary search and a write allocates nothing else.
 */
import type { KeyString } from './bytes.js';
import type { KeyValue } from './types.js';

/** One life of a key: its KeyValues in revision order; a tombstone (createRevision 0) may end it. */
export type Generation = KeyValue[];

/** A tombstone marks a delete: etcd stores it with no value, create revision 0 and version 0. */
export function isTombstone(kv: KeyValue): boolean {
  return kv.createRevision === 0;
}

export class KeyIndex {
  /** The key as raw bytes, shared by every KeyValue of this key (one copy per key, not per revision). */
  readonly keyBytes: Uint8Array;
  readonly key: KeyString;
  generations: Generation[];

  constructor(key: KeyString, keyBytes: Uint8Array, generations: Generation[] = [[]]) {
    this.key = key;
    this.keyBytes = keyBytes;
    this.generations = generations;
  }

  /** The live KeyValue at the newest revision, or undefined when the key is deleted. */
  current(): KeyValue | undefined {
    const g = this.generations[this.generations.length - 1]!;
    return g[g.length - 1];
  }

  /** Appends a put to the current generation (the caller guarantees revisions only grow). */
  put(kv: KeyValue): void {
    this.generations[this.generations.length - 1]!.push(kv);
  }

  /** Ends the current generation with a tombstone and opens an empty one. The key must be live. */
  tombstone(kv: KeyValue): void {
    this.generations[this.generations.length - 1]!.push(kv);
    this.generations.push([]);
  }

  /**
   * The KeyValue visible at `atRev`, or undefined if the key did not exist then (never created, deleted,
   * or between generations). Mirrors keyIndex.get/findGeneration.
   */
  get(atRev: number): KeyValue | undefined {
    const gens = this.generations;
    for (let gi = gens.length - 1; gi >= 0; gi--) {
      const g = gens[gi]!;
      const n = g.length;
      if (n === 0) continue;
      const last = g[n - 1]!;
      if (last.modRevision <= atRev) return isTombstone(last) ? undefined : last;
      if (g[0]!.modRevision > atRev) continue;
      // atRev falls inside this generation: newest KeyValue with modRevision <= atRev.
      let lo = 0;
      let hi = n - 1; // g[lo] <= atRev < g[hi]
      while (hi - lo > 1) {
        const mid = (lo + hi) >>> 1;
        if (g[mid]!.modRevision <= atRev) lo = mid;
        else hi = mid;
      }
      return g[lo];
    }
    return undefined;
  }

  /**
   * etcd's compaction keep rule at `atRev`: skip whole generations that ended before atRev; in the first
   * one left keep the newest revision <= atRev and everything after it. Since etcd v3.6 (PR #18474, issue
   * #18089) a generation whose tombstone is exactly atRev is kept, so a watch from atRev still sees the
   * delete; `keepTombstoneAtRev = false` reproduces the older rule. Returns true when nothing is left and
   * the key should leave the index.
   */
  compact(atRev: number, keepTombstoneAtRev: boolean): boolean {
    const gens = this.generations;
    let gi = 0;
    while (gi < gens.length - 1) {
      const g = gens[gi]!;
      const tomb = g[g.length - 1]!.modRevision;
      if (keepTombstoneAtRev ? tomb >= atRev : tomb > atRev) break;
      gi++;
    }
    const g = gens[gi]!;
    let keepFrom = -1;
    for (let i = g.length - 1; i >= 0; i--) {
      if (g[i]!.modRevision <= atRev) {
        keepFrom = i;
        break;
      }
    }
    if (keepFrom > 0) g.splice(0, keepFrom);
    if (gi > 0) gens.splice(0, gi);
    return gens.length === 1 && gens[0]!.length === 0;
  }

  /** Every stored revision of this key, oldest first (for hashing and snapshots). */
  forEachRevision(fn: (kv: KeyValue) => void): void {
    for (const g of this.generations) for (const kv of g) fn(kv);
  }

  /** Structural invariants of a keyIndex; returns a description of the first violation, if any. */
  checkValid(): string | undefined {
    const gens = this.generations;
    if (gens.length === 0) return `${JSON.stringify(this.key)}: no generations`;
    let prev = 0;
    for (let gi = 0; gi < gens.length; gi++) {
      const g = gens[gi]!;
      const isLast = gi === gens.length - 1;
      if (!isLast && g.length === 0) return `${JSON.stringify(this.key)}: empty generation ${gi} before the last`;
      for (let i = 0; i < g.length; i++) {
        const kv = g[i]!;
        // Equal main revisions are legal: a txn may put and delete one key (etcd's "\0" delete quirk), at
        // two sub-revisions of the same main revision.
        if (kv.modRevision < prev) return `${JSON.stringify(this.key)}: revisions going backwards at ${kv.modRevision}`;
        prev = kv.modRevision;
        const tomb = isTombstone(kv);
        if (tomb !== (!isLast && i === g.length - 1)) {
          return `${JSON.stringify(this.key)}: tombstone misplaced at revision ${kv.modRevision}`;
        }
        if (kv.key !== this.keyBytes) return `${JSON.stringify(this.key)}: key bytes not shared at ${kv.modRevision}`;
        if (tomb) continue;
        const first = g[0]!;
        if (kv.createRevision !== first.createRevision) {
          return `${JSON.stringify(this.key)}: create revision differs inside a generation at ${kv.modRevision}`;
        }
        if (i > 0 && kv.version !== g[i - 1]!.version + 1) {
          return `${JSON.stringify(this.key)}: version does not count up at ${kv.modRevision}`;
        }
      }
    }
    return undefined;
  }
}
