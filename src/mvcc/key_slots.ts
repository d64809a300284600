/**
 * The lookups of one key in the revision index (tree_index.ts): key → slot, by the key's bytes as a request
 * carries them. etcd finds a key's keyIndex by a B-tree descent over byte comparisons; the simulator keeps a
 * hash table beside its B-tree for the lookups of one key (a put, a get, a compare). Keyed by the bytes
 * themselves, a put or a get looks its key up without first making it a string (a fresh string, copied and
 * hashed, per request: a sixth of a put — issue 28); lookups that already hold the index's string form (ranges'
 * ends, compaction, txn checks) hash that instead, to the same value.
 *
 * Open addressing with linear probing in an Int32Array at most half full; a removal shifts the entries after
 * it back (no tombstones), so a table that keys come and go in never slows down. The hash (FNV-1a, then a
 * finalizer that spreads the low bits the table uses) has no seed: the same keys give the same layout on
 * every run, as the simulator's determinism requires. A client that chooses keys to collide makes its own
 * lookups walk further, as many probes as keys it made collide, and nothing worse.
 */
import type { KeyString } from './bytes.js';

/** No slot: the key is not in the table. */
export const NO_SLOT = -1;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash of a key's bytes. */
export function hashBytes(key: Uint8Array): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key[i]!, FNV_PRIME);
  return finish(h);
}

/** The hash of a key in the index's string form (one latin1 character per byte): hashBytes of its bytes. */
export function hashKeyString(key: KeyString): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), FNV_PRIME);
  return finish(h);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  const n = a.length;
  if (n !== b.length) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameKey(a: Uint8Array, key: KeyString): boolean {
  const n = a.length;
  if (n !== key.length) return false;
  for (let i = 0; i < n; i++) if (a[i] !== key.charCodeAt(i)) return false;
  return true;
}

export class KeySlots {
  /** slot + 1 per position; 0: empty. */
  private table = new Int32Array(16);
  private mask = 15;
  private count = 0;
  /** Per slot: its key's bytes (the index's own copy; undefined: a free slot) and their hash. */
  private keys: (Uint8Array | undefined)[] = [];
  private hashes = new Int32Array(16);

  get size(): number {
    return this.count;
  }

  /** The slot of the key whose bytes are `key`, or NO_SLOT. */
  get(key: Uint8Array): number {
    const h = hashBytes(key);
    const table = this.table;
    const mask = this.mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = table[i]!;
      if (e === 0) return NO_SLOT;
      const slot = e - 1;
      if (this.hashes[slot] === h && sameBytes(this.keys[slot]!, key)) return slot;
    }
  }

  /**
   * The slot of `key` (the index's string form), or NO_SLOT. The probe loop is get()'s with the string's hash
   * and comparison: written twice rather than passed a comparison, which would cost a call per probe.
   */
  getString(key: KeyString): number {
    const h = hashKeyString(key);
    const table = this.table;
    const mask = this.mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = table[i]!;
      if (e === 0) return NO_SLOT;
      const slot = e - 1;
      if (this.hashes[slot] === h && sameKey(this.keys[slot]!, key)) return slot;
    }
  }

  /** Adds `key` (absent from the table; bytes the caller never changes) in `slot` (a free one). */
  add(key: Uint8Array, slot: number): void {
    if ((this.count + 1) * 2 > this.table.length) this.rehash(this.table.length * 2);
    if (slot >= this.hashes.length) {
      const to = new Int32Array(Math.max(slot + 1, this.hashes.length * 2));
      to.set(this.hashes);
      this.hashes = to;
    }
    while (this.keys.length <= slot) this.keys.push(undefined);
    const h = hashBytes(key);
    this.keys[slot] = key;
    this.hashes[slot] = h;
    this.place(h, slot);
    this.count++;
  }

  /** Removes the key in `slot` (present in the table); the slot is free again. */
  remove(slot: number): void {
    const table = this.table;
    const mask = this.mask;
    let i = this.hashes[slot]! & mask;
    while (table[i] !== slot + 1) i = (i + 1) & mask;
    // Shift back every entry after the gap whose probe from its home position passes the gap (its home is no
    // nearer to it, round the table, than the gap is): it fills the gap, and its own position is the new gap.
    for (let j = (i + 1) & mask; table[j] !== 0; j = (j + 1) & mask) {
      const home = this.hashes[table[j]! - 1]! & mask;
      if (((j - home) & mask) < ((j - i) & mask)) continue;
      table[i] = table[j]!;
      i = j;
    }
    table[i] = 0;
    this.keys[slot] = undefined;
    this.count--;
  }

  private place(h: number, slot: number): void {
    const table = this.table;
    const mask = this.mask;
    let i = h & mask;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = slot + 1;
  }

  private rehash(size: number): void {
    const old = this.table;
    this.table = new Int32Array(size);
    this.mask = size - 1;
    for (const e of old) if (e !== 0) this.place(this.hashes[e - 1]!, e - 1);
  }
}
