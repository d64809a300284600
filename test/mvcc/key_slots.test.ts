// The index's lookups of one key (src/mvcc/key_slots.ts): adds, removals and lookups by bytes and by the
// string form agree with a Map at every step, however keys collide and tables grow and shrink.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KeySlots, NO_SLOT, hashBytes, hashKeyString } from '../../src/mvcc/key_slots.js';
import { keyString } from '../../src/mvcc/bytes.js';
import { checkProperty } from '../properties/harness.js';

const bytesOf = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

test('a key hashes the same as bytes and in its string form, every byte value included', () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (const k of [new Uint8Array(0), all, all.subarray(200), bytesOf('bench/k1')]) assert.equal(hashBytes(k), hashKeyString(keyString(k)));
  assert.notEqual(hashBytes(bytesOf('a')), hashBytes(bytesOf('b')));
});

test('adds, removals and lookups agree with a Map at every step (short keys over a few bytes: many collisions)', () => {
  const key = fc.uint8Array({ minLength: 0, maxLength: 3, min: 0, max: 3 });
  const op = fc.oneof(fc.record({ add: key }), fc.record({ remove: key }), fc.record({ get: key }));
  checkProperty(
    fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
      const slots = new KeySlots();
      const model = new Map<string, number>();
      const free: number[] = [];
      let next = 0;
      for (const o of ops) {
        if ('add' in o) {
          const s = keyString(o.add);
          if (model.has(s)) continue;
          const slot = free.pop() ?? next++;
          slots.add(Uint8Array.from(o.add), slot);
          model.set(s, slot);
        } else if ('remove' in o) {
          const slot = model.get(keyString(o.remove));
          if (slot === undefined) continue;
          slots.remove(slot);
          model.delete(keyString(o.remove));
          free.push(slot);
        }
        const k = 'add' in o ? o.add : 'remove' in o ? o.remove : o.get;
        const want = model.get(keyString(k)) ?? NO_SLOT;
        assert.equal(slots.get(k), want);
        assert.equal(slots.getString(keyString(k)), want);
        assert.equal(slots.size, model.size);
      }
      for (const [s, slot] of model) assert.equal(slots.get(bytesOf(s)), slot);
    }),
    { file: 'test/mvcc/key_slots.test.ts', numRuns: 300 },
  );
});
