import { test } from 'node:test';
import assert from 'node:assert/strict';

import { IndexedHeap, type HeapItem } from '../../src/sim/heap.js';
import { SimRandom } from '../../src/sim/random.js';

interface Item extends HeapItem {
  key: number;
  id: number;
}

const less = (a: Item, b: Item): boolean => a.key < b.key || (a.key === b.key && a.id < b.id);

test('heap pops in (key, id) order with interleaved removals, matching a sorted reference', () => {
  const rnd = new SimRandom(7);
  const heap = new IndexedHeap<Item>(less);
  const live = new Set<Item>();
  const popped: Item[] = [];
  let id = 0;
  for (let step = 0; step < 5000; step++) {
    const op = rnd.nextInt(0, 9);
    if (op < 5) {
      const item = { key: rnd.nextInt(0, 50), id: id++, heapIndex: -1 };
      heap.push(item);
      live.add(item);
    } else if (op < 8 && live.size > 0) {
      const victim = rnd.pick([...live]);
      assert.equal(heap.remove(victim), true);
      assert.equal(heap.remove(victim), false, 'removing twice must report false');
      assert.equal(victim.heapIndex, -1);
      live.delete(victim);
    } else {
      const expected = [...live].sort((a, b) => (less(a, b) ? -1 : 1))[0];
      const got = heap.pop();
      assert.equal(got, expected);
      if (got !== undefined) {
        live.delete(got);
        popped.push(got);
      }
    }
    assert.equal(heap.size, live.size);
  }
  const rest: Item[] = [];
  for (let it = heap.pop(); it !== undefined; it = heap.pop()) rest.push(it);
  assert.deepEqual(rest, [...live].sort((a, b) => (less(a, b) ? -1 : 1)));
  assert.ok(popped.length > 100, 'the scenario must actually exercise pop');
});

test('heap rejects pushing an item twice and clear() unqueues everything', () => {
  const heap = new IndexedHeap<Item>(less);
  const a = { key: 1, id: 0, heapIndex: -1 };
  heap.push(a);
  assert.throws(() => heap.push(a), /already queued/);
  heap.clear();
  assert.equal(heap.size, 0);
  assert.equal(a.heapIndex, -1);
  assert.equal(heap.remove(a), false);
  heap.push(a);
  assert.equal(heap.pop(), a);
  assert.equal(heap.pop(), undefined);
});
