/**
 * treeIndex (etcd server/storage/mvcc/index.go): the ordered map from key to keyIndex, a sorted-btree in
 * byte order of keys.
 *
 * The B-tree does not hold the keyIndexes themselves but their slot numbers in a side table. A B-tree leaf
 * is a long-lived array that every insert shifts; were its values pointers to freshly allocated
 * keyIndexes, each shift would make V8's write barrier record old-to-young pointers that every minor GC
 * must then revisit. Small integers are not pointers, so the leaves' value arrays cost the collector
 * nothing. At a million puts this is the difference of a good part of a microsecond per put.
 *
 * A slot holds a key's only revision directly (its record number in the store's History, history.ts) while
 * the key has a single revision, and a KeyIndex from its second revision on (or when a writer asks for the
 * keyIndex to change it): most keys of a large store are written once, and for them this saves an object per
 * key. Reads never change that form: read-only lookups and walks build a throwaway ReadonlyKeyIndex for such
 * a key, or read its record directly, so a hash or a snapshot of the store leaves the index as small as it
 * found it.
 *
 * Beside the B-tree, a hash table from key to slot answers the lookups of one key (a get, a put of a key that
 * exists, a compare): a B-tree descent compares the key with a dozen others, a hash lookup with one. It is
 * keyed by the key's bytes (key_slots.ts), so a request's key is looked up as it came, without making its
 * string first; the string is made once per key, for the B-tree, which keeps the order, for ranges.
 */
import { BTreeEx as BTree } from 'sorted-btree/extended/index.js';
import type { KeyString } from './bytes.js';
import { KeySlots, NO_SLOT } from './key_slots.js';
import { NO_RECORD, type History, type Rec } from './history.js';
import { KeyIndex, type ReadonlyKeyIndex, type Tally } from './key_index.js';
import type { KeyValue } from './types.js';

/**
 * Entries per B-tree node. Wider than sorted-btree's default of 32: a shallower tree costs fewer node hops
 * per descent, and at a million keys that outweighs the longer shifts inside a leaf.
 */
const MAX_NODE_SIZE = 64;

/** What a callback of sorted-btree's range walks returns to end the walk. */
const STOP = { break: true } as const;

/** What a slot holds: a keyIndex, or the record of a key with one revision. */
type Entry = KeyIndex | Rec;

/** The record of `e` visible at `atRev` (KeyIndex.getRec for a single revision), or NO_RECORD. */
function entryAt(h: History, e: Entry, atRev: number): Rec {
  if (typeof e !== 'number') return e.getRec(atRev);
  return h.modRevision(e) <= atRev && !h.isTombstone(e) ? e : NO_RECORD;
}

/**
 * KeyIndex.compact on one slot's entry, dropping what goes; true when nothing is left of the key. An entry in
 * the single-revision form is a key's one put (a delete makes its keyIndex first), which a compaction keeps:
 * it is what a read at atRev sees.
 */
function compactEntry(e: Entry, atRev: number, keepTombstoneAtRev: boolean, dropped: Tally): boolean {
  return typeof e !== 'number' && e.compact(atRev, keepTombstoneAtRev, dropped);
}

export class TreeIndex {
  /** Where the revisions the index names are stored. */
  readonly history: History;
  /** key → slot in `entries`. */
  private tree: BTree<KeyString, number>;
  /** slot → entry; a freed slot holds undefined until a new key reuses it. */
  private entries: (Entry | undefined)[];
  /** Slots freed by removed keys, reused first. */
  private freeSlots: number[] = [];
  /** key → slot, the same pairs as `tree`: the lookups of one key, by its bytes or its string (key_slots.ts). */
  private slots = new KeySlots();
  /** slot → its key's string form, what the B-tree holds (undefined: a free slot). */
  private slotKeys: (KeyString | undefined)[];

  /** An index over `history` holding `keyIndexes` (sorted by key, no duplicates), built in one pass. */
  constructor(history: History, keyIndexes: readonly KeyIndex[] = []) {
    this.history = history;
    this.entries = keyIndexes.slice();
    this.tree = BTree.bulkLoad<KeyString, number>(
      keyIndexes.map((ki) => ki.key),
      keyIndexes.map((_, slot) => slot),
      MAX_NODE_SIZE,
    );
    this.slotKeys = keyIndexes.map((ki) => ki.key);
    keyIndexes.forEach((ki, slot) => this.slots.add(ki.keyBytes, slot));
  }

  /** Number of keys in the index. */
  get size(): number {
    return this.tree.size;
  }

  /** The oldest revision the index holds of `key` (a tombstone included), or undefined when it has none. */
  oldestModRevision(key: KeyString): number | undefined {
    const slot = this.slots.getString(key);
    if (slot === NO_SLOT) return undefined;
    const e = this.entries[slot]!;
    return typeof e !== 'number' ? e.oldestModRevision() : this.history.modRevision(e);
  }

  /**
   * The keyIndex of `key` to read, or undefined. For a key held in single-revision form it is a throwaway
   * built for this call: the index keeps the compact form.
   */
  get(key: KeyString): ReadonlyKeyIndex | undefined {
    const slot = this.slots.getString(key);
    return slot === NO_SLOT ? undefined : this.readAt(key, slot);
  }

  /**
   * The keyIndex of `key` to change (append, pop), or undefined; a key held in single-revision form is
   * turned into a stored keyIndex first.
   */
  getForWrite(key: KeyString): KeyIndex | undefined {
    const slot = this.slots.getString(key);
    return slot === NO_SLOT ? undefined : this.keyIndexAt(key, slot);
  }

  /** getForWrite() by the key's bytes: a put looks its key up without making its string. */
  getForWriteBytes(key: Uint8Array): KeyIndex | undefined {
    const slot = this.slots.get(key);
    return slot === NO_SLOT ? undefined : this.keyIndexAt(this.slotKeys[slot]!, slot);
  }

  /** The KeyValue of `key` visible at `atRev` (its keyIndex's getRec), or undefined, without making a keyIndex. */
  getAt(key: KeyString, atRev: number): KeyValue | undefined {
    return this.kvAt(this.slots.getString(key), atRev);
  }

  /** getAt() by the key's bytes: a get looks its key up without making its string. */
  getAtBytes(key: Uint8Array, atRev: number): KeyValue | undefined {
    return this.kvAt(this.slots.get(key), atRev);
  }

  /**
   * The record of the key whose bytes are `key` visible at `atRev`, or NO_RECORD: what a compare reads, one
   * field of it, without the KeyValue a read builds (issue 28: that KeyValue was a tenth of a CAS).
   */
  recordAtBytes(key: Uint8Array, atRev: number): Rec {
    const slot = this.slots.get(key);
    return slot === NO_SLOT ? NO_RECORD : entryAt(this.history, this.entries[slot]!, atRev);
  }

  private kvAt(slot: number, atRev: number): KeyValue | undefined {
    if (slot === NO_SLOT) return undefined;
    const r = entryAt(this.history, this.entries[slot]!, atRev);
    return r === NO_RECORD ? undefined : this.history.kvRead(r);
  }

  /** The keyIndex in `slot` for reading: the stored one, or a throwaway made from the slot's single record. */
  private readAt(key: KeyString, slot: number): ReadonlyKeyIndex {
    const e = this.entries[slot]!;
    return typeof e !== 'number' ? e : new KeyIndex(this.history, key, this.history.key(e), [e]);
  }

  /** The keyIndex in `slot` for writing, made (and stored) from the slot's single record if needed. */
  private keyIndexAt(key: KeyString, slot: number): KeyIndex {
    const e = this.entries[slot]!;
    if (typeof e !== 'number') return e;
    const ki = new KeyIndex(this.history, key, this.history.key(e), [e]);
    this.entries[slot] = ki;
    return ki;
  }

  /**
   * Inserts `key` (its bytes `keyBytes`: the store's own copy, never changed), which the caller has just
   * looked up and not found, and returns its new slot. The caller must then fill the slot with setFirst()
   * before anything else reads the index. One B-tree descent; the caller's lookup is the only one (a put of a
   * key that exists looks it up once, not twice).
   */
  insertAbsent(key: KeyString, keyBytes: Uint8Array): number {
    const free = this.freeSlots;
    const slot = free.length > 0 ? free[free.length - 1]! : this.entries.length;
    this.tree.set(key, slot);
    this.slots.add(keyBytes, slot);
    if (slot === this.entries.length) {
      this.entries.push(undefined);
      this.slotKeys.push(key);
    } else {
      free.pop();
      this.slotKeys[slot] = key;
    }
    return slot;
  }

  /** Fills a slot returned by insertAbsent() with the key's first revision. */
  setFirst(slot: number, r: Rec): void {
    this.entries[slot] = r;
  }

  /** Removes `key` (present in the index: its one caller, a rollback, found it there). */
  delete(key: KeyString): void {
    this.tree.delete(key);
    this.release(this.slots.getString(key));
  }

  /** Removes every key of `keys` (each present in the index: compact() found them there). */
  private deleteKeys(keys: KeyString[]): void {
    for (const key of keys) this.release(this.slots.getString(key));
    this.tree.deleteKeys(keys);
  }

  private release(slot: number): void {
    this.slots.remove(slot);
    this.entries[slot] = undefined;
    this.slotKeys[slot] = undefined;
    this.freeSlots.push(slot);
  }

  /** The greatest key, or undefined when empty. */
  maxKey(): KeyString | undefined {
    return this.tree.maxKey();
  }

  /**
   * Visits the keys in [low, high) (or [low, high] with includeHigh) in byte order, with their keyIndexes to
   * change (each key is turned into a stored keyIndex: a delete's scan). The callback must not add or remove
   * keys.
   */
  forRangeForWrite(low: KeyString, high: KeyString, includeHigh: boolean, visit: (key: KeyString, ki: KeyIndex) => void): void {
    this.tree.forRange(low, high, includeHigh, (key, slot) => {
      visit(key, this.keyIndexAt(key, slot));
    });
  }

  /**
   * Visits the KeyValues visible at `atRev` of the keys in [low, high) (or [low, high]), in byte order, with
   * their keys; the walk stops early when `visit` returns true.
   */
  forRangeAt(low: KeyString, high: KeyString, includeHigh: boolean, atRev: number, visit: (kv: KeyValue, key: KeyString) => boolean): void {
    const h = this.history;
    this.forRangeRecordsAt(low, high, includeHigh, atRev, (r, key) => visit(h.kvRead(r), key));
  }

  /** forRangeAt with the visible revisions' records instead of KeyValues (a compare over a range reads one field of each). */
  forRangeRecordsAt(low: KeyString, high: KeyString, includeHigh: boolean, atRev: number, visit: (r: Rec, key: KeyString) => boolean): void {
    const entries = this.entries;
    const h = this.history;
    this.tree.forRange(low, high, includeHigh, (key, slot) => {
      const r = entryAt(h, entries[slot]!, atRev);
      if (r !== NO_RECORD && visit(r, key)) return STOP;
      return undefined;
    });
  }

  // Stryker disable all: the walk of the store's checkValid() (the properties' oracle, docs/mutation.md) and of a
  // benchmark; no request reaches it, so a mutant of it can only make the oracle see less
  /**
   * Visits every key in byte order, with its keyIndex to read (a throwaway for a key in single-revision
   * form). The callback must not add or remove keys.
   */
  forEachPair(visit: (key: KeyString, ki: ReadonlyKeyIndex) => void): void {
    this.tree.forEachPair((key, slot) => {
      visit(key, this.readAt(key, slot));
    });
  }
  // Stryker restore all

  /**
   * Visits every key in byte order with its stored revisions, oldest first (a fresh array the callback may
   * keep): the walk of the hashes and of a snapshot, which need the revisions and not a keyIndex.
   */
  forEachRevs(visit: (key: KeyString, keyBytes: Uint8Array, revs: KeyValue[]) => void): void {
    this.forEachRecords((key, keyBytes, records) => visit(key, keyBytes, records.map((r) => this.history.kv(r))));
  }

  /** forEachRevs with the revisions' records instead of KeyValues (a fresh array the callback may keep). */
  forEachRecords(visit: (key: KeyString, keyBytes: Uint8Array, records: Rec[]) => void): void {
    const entries = this.entries;
    const h = this.history;
    this.tree.forEachPair((key, slot) => {
      const e = entries[slot]!;
      if (typeof e !== 'number') visit(key, e.keyBytes, e.records());
      else visit(key, h.key(e), [e]);
    });
  }

  // Stryker disable all: an inspection of the index's memory form for example tests and benchmarks
  // (test/mvcc/index_form.test.ts), no behaviour a request can see, so no property can judge it
  /**
   * How many keys the index holds as a keyIndex object rather than in single-revision form (an inspection
   * for tests and benchmarks: reads must not change it).
   */
  keyIndexCount(): number {
    let n = 0;
    for (const e of this.entries) if (e !== undefined && typeof e !== 'number') n++;
    return n;
  }
  // Stryker restore all

  /**
   * KeyIndex.compact on every key, without making keyIndexes for single-revision keys; keys left with
   * nothing are removed. Costs a walk of the whole index; compactKeys() does the same for a known few.
   */
  compact(atRev: number, keepTombstoneAtRev: boolean, dropped: Tally): void {
    const entries = this.entries;
    const emptied: KeyString[] = [];
    this.tree.forEachPair((key, slot) => {
      if (compactEntry(entries[slot]!, atRev, keepTombstoneAtRev, dropped)) emptied.push(key);
    });
    this.deleteKeys(emptied);
  }

  /**
   * compact(), but only on `keys` (duplicates and absent keys allowed): enough when every other key is
   * known to be untouched by a compaction at atRev (see Storage.compact). An absent key: one an earlier
   * duplicate emptied, or a lone tombstone's that a rebuild before etcd PR #19188 left out of the index.
   */
  compactKeys(keys: Iterable<KeyString>, atRev: number, keepTombstoneAtRev: boolean, dropped: Tally): void {
    for (const key of keys) {
      const slot = this.slots.getString(key);
      if (slot === NO_SLOT) continue; // already emptied by an earlier duplicate
      if (compactEntry(this.entries[slot]!, atRev, keepTombstoneAtRev, dropped)) {
        this.tree.delete(key);
        this.release(slot);
      }
    }
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** Whether the hash map and the B-tree hold the same pairs; returns the first difference, if any. */
  checkLookups(): string | undefined {
    if (this.slots.size !== this.tree.size) return `${this.slots.size} keys in the lookup map, ${this.tree.size} in the B-tree`;
    let problem: string | undefined;
    this.tree.forEachPair((key, slot) => {
      if (problem === undefined && (this.slots.getString(key) !== slot || this.slotKeys[slot] !== key)) {
        problem = `${JSON.stringify(key)} is in slot ${slot}, the lookup map says ${this.slots.getString(key)}, the slot's key is ${JSON.stringify(this.slotKeys[slot])}`;
      }
    });
    return problem;
  }
  // Stryker restore all
}
