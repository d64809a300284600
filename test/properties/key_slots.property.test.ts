// The revision index's hash table (src/mvcc/key_slots.ts: key → slot, open addressing, removal by shifting
// back) against a Map. etcd finds a key's keyIndex by a B-tree descent; the simulator answers the lookups of
// one key from this table, so a key it loses, finds in the wrong slot or keeps after its removal is a put
// that forgets a key's history or a get that answers another key. The store's own property reaches the
// table with a handful of keys; here each run draws its own universe of up to 150 keys of up to four bytes
// (a fixed universe lays out the same way in every run: one of 85 keys never made a run of colliding keys
// cross the table's end), and they come and go in every order, so the table grows past 16, 32, 64, 128 and
// 256 positions, probes wrap around its end and removals shift back runs of colliding keys. Every key of
// the universe is looked up, by its bytes and by its string form, after every step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hashBytes, hashKeyString, KeySlots } from '../../src/mvcc/key_slots.js';
import type { KeyString } from '../../src/mvcc/bytes.js';
import { checkProperty } from './harness.js';

const asString = (k: Uint8Array): KeyString => Buffer.from(k).toString('latin1') as KeyString;

/** A step: add a key (which one, and whether its slot is the lowest free one or one far past the end), or remove one. */
type Step = { readonly op: 'add'; readonly key: number; readonly far: boolean } | { readonly op: 'remove'; readonly key: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('add' as const), key: fc.nat(), far: fc.constant(false) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('add' as const), key: fc.nat(), far: fc.constant(true) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('remove' as const), key: fc.nat() }) },
);

/**
 * Pairs of keys whose hashes are equal (found by a birthday search over 2^20 keys, and 'k' with a longer key
 * it starts, by a meet-in-the-middle search; the hash has no seed), of one length and of two: only such a pair
 * makes a lookup compare the bytes of a key that merely shares its hash — a client that chooses its keys to
 * collide. If the hash changes, search again: the property still
 * passes without them, but no longer tells a byte comparison that always agrees from a right one.
 */
const COLLIDING: readonly string[] = ['S|u}', '-/Fi', 'F4ZL', 'Z=:E', 'VLS', 'W^S}', '_>V', 'WYkd', 'k', 'k\u0000\u00ab\u0000V\u001f'];

const universeArb = fc
  .uniqueArray(fc.uint8Array({ maxLength: 4 }), { minLength: 1, maxLength: 150, size: 'max', selector: (k) => Buffer.from(k).toString('latin1') })
  .chain((keys) => fc.shuffledSubarray(COLLIDING.map((c) => Uint8Array.from(Buffer.from(c, 'latin1')))).map((pairs) => [...pairs, ...keys.filter((k) => !COLLIDING.includes(Buffer.from(k).toString('latin1')))]))
  .filter((u) => u.length > 0);

test('KeySlots agrees with a Map as keys come and go', () => {
  checkProperty(
    fc.property(universeArb, fc.array(stepArb, { minLength: 1, maxLength: 400, size: 'max' }), fc.constantFrom(4, 8, 16, 32, 150), (universe, steps, cap) => {
      const table = new KeySlots();
      const model = new Map<number, number>(); // universe index → slot
      const used = new Set<number>();
      // Keys are handed in as copies: the table must compare bytes, not identities.
      const copy = (i: number): Uint8Array => Uint8Array.from(universe[i]!);
      const check = (i: number, after: Step): void => {
        const want = model.get(i) ?? -1; // NO_SLOT, written out: a constant the table shares with the test would hide a change to it
        assert.equal(table.get(copy(i)), want, `get(${JSON.stringify(asString(universe[i]!))}) after ${JSON.stringify(after)}`);
        assert.equal(table.getString(asString(universe[i]!)), want, `getString(${JSON.stringify(asString(universe[i]!))})`);
      };
      steps.forEach((s, n) => {
        let key = s.key % universe.length;
        // Held at `cap` keys (a table of 2 * cap positions, exactly half full) an add removes one instead,
        // so runs of colliding keys reach round the table's end and are shifted back across it.
        const op = s.op === 'add' && model.size >= cap ? 'remove' : s.op;
        if (op !== s.op && !model.has(key)) key = [...model.keys()][s.key % model.size]!;
        if (op === 'add') {
          if (model.has(key)) return;
          let slot = 0;
          if (s.op === 'add' && s.far) slot = Math.max(-1, ...used) + 1 + 20 + (key % 7);
          else while (used.has(slot)) slot++;
          table.add(copy(key), slot);
          model.set(key, slot);
          used.add(slot);
        } else {
          const slot = model.get(key);
          if (slot === undefined) return;
          table.remove(slot);
          model.delete(key);
          used.delete(slot);
        }
        assert.equal(table.size, model.size, 'size');
        // The key the step touched at once; every key of the universe every tenth step and at the end.
        check(key, s);
        if (n % 10 === 9 || n === steps.length - 1) for (let i = 0; i < universe.length; i++) check(i, s);
      });
    }),
    { file: 'test/properties/key_slots.property.test.ts', numRuns: 100 },
  );
});

test('KeySlots hashes a key alike by its bytes and by its string form', () => {
  checkProperty(
    fc.property(fc.uint8Array({ maxLength: 40 }), (k) => {
      assert.equal(hashBytes(k), hashKeyString(asString(k)));
    }),
    { file: 'test/properties/key_slots.property.test.ts', numRuns: 200 },
  );
});
