/**
 * treeIndex (etcd server/storage/mvcc/index.go): the ordered map from key to keyIndex, a sorted-btree in
 * byte order of keys.
 *
 * The B-tree does not hold the keyIndexes themselves but their slot numbers in a side table. A B-tree leaf
 * is a long-lived array that every insert shifts; were its values pointers to freshly allocated
 * keyIndexes, each shift would make V8's write barrier record old-to-young pointers that every minor GC
 * must then revisit. Small integers are not pointers, so the leaves' value arrays cost the collector
 * nothing. At a million puts this is the difference of a good part of a microsecond per put.
 */
import { BTreeEx as BTree } from 'sorted-btree/extended/index.js';
import type { KeyString } from './bytes.js';
import type { KeyIndex } from './key_index.js';

/**
 * Entries per B-tree node. Wider than sorted-btree's default of 32: a shallower tree costs fewer node hops
 * per descent, and at a million keys that outweighs the longer shifts inside a leaf.
 */
const MAX_NODE_SIZE = 64;

export class TreeIndex {
  /** key → slot in `keyIndexes`. */
  private tree: BTree<KeyString, number>;
  /** slot → keyIndex; a freed slot holds undefined until a new key reuses it. */
  private keyIndexes: (KeyIndex | undefined)[];
  /** Slots freed by removed keys, reused first. */
  private freeSlots: number[] = [];

  /** An index holding `keyIndexes` (sorted by key, no duplicates), built in one pass. */
  constructor(keyIndexes: readonly KeyIndex[] = []) {
    this.keyIndexes = keyIndexes.slice();
    this.tree = BTree.bulkLoad<KeyString, number>(
      keyIndexes.map((ki) => ki.key),
      keyIndexes.map((_, slot) => slot),
      MAX_NODE_SIZE,
    );
  }

  /** Number of keys in the index. */
  get size(): number {
    return this.tree.size;
  }

  get(key: KeyString): KeyIndex | undefined {
    const slot = this.tree.get(key);
    return slot === undefined ? undefined : this.keyIndexes[slot];
  }

  /**
   * The keyIndex of `key`; if the key is absent, `spare` goes in as its keyIndex and is returned. One
   * B-tree descent for a new key (the caller tells the cases apart by identity with `spare`).
   */
  getOrAdd(key: KeyString, spare: KeyIndex): KeyIndex {
    const free = this.freeSlots;
    const slot = free.length > 0 ? free[free.length - 1]! : this.keyIndexes.length;
    if (this.tree.set(key, slot, false)) {
      if (slot === this.keyIndexes.length) this.keyIndexes.push(spare);
      else {
        free.pop();
        this.keyIndexes[slot] = spare;
      }
      return spare;
    }
    return this.keyIndexes[this.tree.get(key)!]!;
  }

  delete(key: KeyString): void {
    const slot = this.tree.get(key);
    if (slot === undefined) return;
    this.tree.delete(key);
    this.release(slot);
  }

  /** Removes every key of `keys` (each present in the index). */
  deleteKeys(keys: KeyString[]): void {
    for (const key of keys) {
      const slot = this.tree.get(key);
      if (slot !== undefined) this.release(slot);
    }
    this.tree.deleteKeys(keys);
  }

  private release(slot: number): void {
    this.keyIndexes[slot] = undefined;
    this.freeSlots.push(slot);
  }

  /** The greatest key, or undefined when empty. */
  maxKey(): KeyString | undefined {
    return this.tree.maxKey();
  }

  /** Visits the keys in [low, high) (or [low, high] with includeHigh) in byte order. */
  forRange(low: KeyString, high: KeyString, includeHigh: boolean, visit: (key: KeyString, ki: KeyIndex) => void): void {
    const keyIndexes = this.keyIndexes;
    this.tree.forRange(low, high, includeHigh, (key, slot) => {
      visit(key, keyIndexes[slot]!);
    });
  }

  /** Visits every key in byte order. The callback must not add or remove keys. */
  forEachPair(visit: (key: KeyString, ki: KeyIndex) => void): void {
    const keyIndexes = this.keyIndexes;
    this.tree.forEachPair((key, slot) => {
      visit(key, keyIndexes[slot]!);
    });
  }

  /** Visits every keyIndex in key order. */
  forEach(visit: (ki: KeyIndex) => void): void {
    this.forEachPair((_key, ki) => visit(ki));
  }
}
