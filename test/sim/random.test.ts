import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SimRandom, fnv1a64 } from '../../src/sim/random.js';

const ints = (r: SimRandom, n = 50): number[] => Array.from({ length: n }, () => r.nextInt(0, 1_000_000));
const MAX_INT64 = (1n << 63n) - 1n;

test('same seed gives the same sequences; number and bigint seeds agree', () => {
  const draw = (r: SimRandom): unknown[] => [
    ...ints(r, 20),
    ...Array.from({ length: 10 }, () => r.nextFloat()),
    ...Array.from({ length: 10 }, () => r.nextUint63()),
    r.shuffle([1, 2, 3, 4, 5, 6, 7, 8]),
  ];
  assert.deepEqual(draw(new SimRandom(1234)), draw(new SimRandom(1234)));
  assert.deepEqual(draw(new SimRandom(1234)), draw(new SimRandom(1234n)));
  assert.notDeepEqual(ints(new SimRandom(1234)), ints(new SimRandom(1235)));
  assert.notDeepEqual(ints(new SimRandom(0)), ints(new SimRandom(1n << 40n)), 'high seed bits matter');
});

test('seeds are reduced to uint64 and non-integer seeds are rejected', () => {
  assert.equal(new SimRandom(-1).seed, (1n << 64n) - 1n);
  assert.deepEqual(ints(new SimRandom(-1)), ints(new SimRandom((1n << 64n) - 1n)));
  assert.throws(() => new SimRandom(1.5), RangeError);
  assert.throws(() => new SimRandom(2 ** 60), RangeError);
});

test('golden values: the derivation of streams from a seed is pinned so recorded seeds replay', () => {
  const r = new SimRandom(42);
  assert.deepEqual(
    Array.from({ length: 6 }, () => r.nextInt(0, 1000)),
    [675, 347, 341, 46, 799, 209],
  );
  const lease = new SimRandom(42).fork('lease');
  assert.equal(lease.nextUint63(), 1752275844566228616n);
  assert.equal(lease.nextUint63(), 7864969860307165078n);
  assert.equal(fnv1a64(''), 0xcbf29ce484222325n);
  assert.equal(fnv1a64('a'), 0xaf63dc4c8601ec8cn);
});

test('fork streams depend only on seed and name, not on other forks or parent consumption', () => {
  const alone = ints(new SimRandom(9).fork('a'));

  const busy = new SimRandom(9);
  ints(busy, 17); // the parent consumed values
  const b = busy.fork('b'); // another subsystem added its own stream first
  ints(b, 33);
  const a = busy.fork('a');
  ints(busy.fork('c'), 5);
  assert.deepEqual(ints(a), alone);

  assert.notDeepEqual(ints(new SimRandom(9).fork('b')), alone);
  assert.notDeepEqual(ints(new SimRandom(9)), alone, 'a fork differs from its parent');
  assert.notDeepEqual(ints(new SimRandom(10).fork('a')), alone, 'a fork depends on the seed');
});

test('nested forks are distinct from each other and from flat names, and report their path', () => {
  const root = new SimRandom(5);
  const ab = root.fork('a').fork('b');
  const ba = root.fork('b').fork('a');
  const flat = root.fork('a/b');
  assert.equal(ab.path, 'a/b');
  assert.equal(root.path, '');
  assert.equal(ab.seed, 5n);
  const [x, y, z] = [ints(ab), ints(ba), ints(flat)];
  assert.notDeepEqual(x, y);
  assert.notDeepEqual(x, z);
  assert.deepEqual(ints(new SimRandom(5).fork('a').fork('b')), x);
});

test('nextUint63 is an exact bigint in [1, 2^63-1] and usually above 2^53', () => {
  const r = new SimRandom(77).fork('lease-ids');
  const seen = new Set<bigint>();
  let above53 = 0;
  let oddCount = 0;
  for (let i = 0; i < 2000; i++) {
    const id = r.nextUint63();
    assert.equal(typeof id, 'bigint');
    assert.ok(id >= 1n && id <= MAX_INT64, `out of range: ${id}`);
    if (id > 1n << 53n) above53++;
    if (id % 2n === 1n) oddCount++;
    seen.add(id);
  }
  assert.equal(seen.size, 2000, 'no collisions expected in 2000 draws from 2^63');
  assert.ok(above53 > 1900, `only ${above53} of 2000 above 2^53`);
  // Exactness: a float path would make the low bit nearly always 0 for values above 2^53.
  assert.ok(oddCount > 800 && oddCount < 1200, `low bit is biased: ${oddCount} odd of 2000`);
});

test('nextInt covers [min, max] inclusively and validates its arguments', () => {
  const r = new SimRandom(3);
  const counts = new Map<number, number>();
  for (let i = 0; i < 6000; i++) {
    const v = r.nextInt(-2, 3);
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  assert.deepEqual([...counts.keys()].sort((a, b) => a - b), [-2, -1, 0, 1, 2, 3]);
  for (const c of counts.values()) assert.ok(c > 800 && c < 1200, `skewed count ${c}`);
  assert.equal(r.nextInt(7, 7), 7);
  const big = r.nextInt(0, Number.MAX_SAFE_INTEGER);
  assert.ok(Number.isSafeInteger(big) && big >= 0);
  assert.throws(() => r.nextInt(2, 1), RangeError);
  assert.throws(() => r.nextInt(0, 1.5), RangeError);
});

test('nextFloat is in [0, 1); nextBool, pick and shuffle behave', () => {
  const r = new SimRandom(11);
  let sum = 0;
  for (let i = 0; i < 5000; i++) {
    const f = r.nextFloat();
    assert.ok(f >= 0 && f < 1);
    sum += f;
  }
  assert.ok(Math.abs(sum / 5000 - 0.5) < 0.03);
  assert.equal(r.nextBool(0), false);
  assert.equal(r.nextBool(1), true);
  assert.throws(() => r.nextBool(2), RangeError);
  assert.throws(() => r.pick([]), RangeError);
  const items = ['x', 'y', 'z'];
  assert.ok(items.includes(r.pick(items)));
  const shuffled = r.shuffle(Array.from({ length: 20 }, (_, i) => i));
  assert.deepEqual([...shuffled].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
  assert.notDeepEqual(shuffled, Array.from({ length: 20 }, (_, i) => i));
});
