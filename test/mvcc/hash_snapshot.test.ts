import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrCompacted, ErrFutureRev, MvccStore, type RequestOp } from '../../src/index.js';
import { SimRandom } from '../../src/sim/random.js';
import { b, expectError, FakeLessor, NUL } from './helpers.js';

type Op = (s: MvccStore) => void;

/** A deterministic workload over a few keys: puts, deletes, txns and compactions. */
function workload(seed: number, n: number): Op[] {
  const rnd = new SimRandom(seed);
  const keys = ['a', 'a/1', 'a/2', 'b', 'c', 'c\0', 'c\xff'];
  const ops: Op[] = [];
  for (let i = 0; i < n; i++) {
    const k = rnd.pick(keys);
    const v = String(rnd.nextInt(0, 9));
    const kind = rnd.nextInt(0, 9);
    if (kind <= 4) ops.push((s) => void s.put({ key: b(k), value: b(v), lease: rnd.nextBool(0.2) ? 1n : 0n }));
    else if (kind === 5) ops.push((s) => void s.deleteRange({ key: b(k) }));
    else if (kind === 6) ops.push((s) => void s.deleteRange({ key: b(k), rangeEnd: b('c') }));
    else if (kind === 7) {
      const other = rnd.pick(keys.filter((x) => x !== k));
      const success: RequestOp[] = [{ requestPut: { key: b(k), value: b(v) } }, { requestRange: { key: NUL, rangeEnd: NUL } }, { requestDeleteRange: { key: b(other) } }];
      ops.push((s) => void s.txn({ compare: [{ key: b(k), target: 'VALUE', result: 'LESS', value: b('5') }], success, failure: [{ requestPut: { key: b(other), value: b(v) } }] }));
    } else if (kind === 8) {
      const back = rnd.nextInt(0, 3);
      ops.push((s) => {
        const at = s.currentRevision - back;
        if (at > s.compactRevision) s.compact(at);
      });
    } else ops.push((s) => void s.range({ key: NUL, rangeEnd: NUL }));
  }
  return ops;
}

function newStore(): MvccStore {
  return new MvccStore({ lessor: new FakeLessor([1n]) });
}

/** Every readable revision of a store, as full ranges, plus its events. */
function history(s: MvccStore): unknown[] {
  const out: unknown[] = [];
  for (let r = Math.max(1, s.compactRevision); r <= s.currentRevision; r++) {
    out.push([r, s.range({ key: NUL, rangeEnd: NUL, revision: r }), s.eventsAt(r)]);
  }
  return out;
}

test('equal histories hash equal; the hash is deterministic', () => {
  const a = newStore();
  const c = newStore();
  for (const op of workload(7, 200)) op(a);
  for (const op of workload(7, 200)) op(c);
  assert.equal(a.hash(), c.hash());
  assert.equal(a.hash(), a.hash());
  assert.equal(new MvccStore().hash(), new MvccStore().hash());
  const d = newStore();
  for (const op of workload(8, 200)) op(d);
  assert.notEqual(a.hash(), d.hash());
});

test('every write changes the hash; reads and no-op writes do not', () => {
  const s = newStore();
  const seen = new Set<number>([s.hash()]);
  const changes: Op[] = [
    (x) => void x.put({ key: b('a'), value: b('1') }),
    (x) => void x.put({ key: b('a'), value: b('1') }),
    (x) => void x.put({ key: b('a'), value: b('1'), lease: 1n }),
    (x) => void x.put({ key: b('b') }),
    (x) => void x.deleteRange({ key: b('b') }),
    (x) => void x.txn({ success: [{ requestPut: { key: b('c') } }] }),
    (x) => void x.put({ key: b('a'), ignoreValue: true }),
    (x) => void x.compact(3),
    (x) => void x.compact(4),
  ];
  for (const op of changes) {
    op(s);
    const h = s.hash();
    assert.ok(!seen.has(h), `hash repeated after a write at revision ${s.currentRevision}`);
    seen.add(h);
  }
  const h = s.hash();
  s.range({ key: NUL, rangeEnd: NUL });
  s.deleteRange({ key: b('nothing') });
  s.txn({ success: [{ requestRange: { key: b('a') } }] });
  s.txn({ compare: [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 99 }] });
  assert.equal(s.hash(), h);
});

test('the compaction point is part of the hash, even when compaction drops no revision', () => {
  const s = newStore();
  const h0 = s.hash();
  s.compact(0);
  assert.notEqual(s.hash(), h0);
  s.put({ key: b('a') });
  const h1 = s.hash();
  s.compact(1);
  assert.notEqual(s.hash(), h1);
});

test('hash(rev) of a longer history equals the hash the store had at rev', () => {
  const rnd = new SimRandom(11);
  const s = newStore();
  const at = new Map<number, number>([[1, s.hash()]]);
  for (let i = 0; i < 150; i++) {
    const k = rnd.pick(['a', 'b', 'c', 'd']);
    if (rnd.nextBool(0.3)) s.deleteRange({ key: b(k) });
    else s.put({ key: b(k), value: b(String(i)) });
    at.set(s.currentRevision, s.hash());
  }
  assert.ok(at.size > 100);
  for (const [rev, h] of at) assert.equal(s.hash(rev), h, `hash at ${rev}`);
  assert.notEqual(s.hash(1), s.hash());
});

test('snapshot/restore round-trips hash, revisions, reads at every revision and events', () => {
  for (const seed of [1, 2, 3]) {
    const s = newStore();
    for (const op of workload(seed, 300)) op(s);
    const snap = s.snapshot();
    const r = newStore();
    r.restore(snap);
    assert.equal(r.hash(), s.hash());
    assert.equal(r.currentRevision, s.currentRevision);
    assert.equal(r.compactRevision, s.compactRevision);
    assert.deepStrictEqual(history(r), history(s));
    for (let rev = 0; rev <= s.currentRevision + 1; rev++) assert.deepStrictEqual(r.eventsAt(rev), s.eventsAt(rev), `eventsAt(${rev})`);
    if (s.compactRevision > 1) expectError(() => r.range({ key: b('a'), revision: s.compactRevision - 1 }), ErrCompacted);
    assert.equal(r.checkValid(), undefined);
  }
});

test('a restored store is independent of the original, and a snapshot of the state when taken', () => {
  const s = newStore();
  for (const op of workload(5, 150)) op(s);
  const snap = s.snapshot();
  const sHash = s.hash();
  const sHist = history(s);
  const r = newStore();
  r.restore(snap);
  // Writes to the copy leave the original alone...
  for (const op of workload(6, 100)) op(r);
  r.put({ key: b('a'), value: b('copy') });
  assert.equal(s.hash(), sHash);
  assert.deepStrictEqual(history(s), sHist);
  // ...and writes to the original leave the copy and the snapshot alone.
  const rHash = r.hash();
  const rHist = history(r);
  for (const op of workload(9, 100)) op(s);
  s.put({ key: b('a'), value: b('orig') });
  s.compact(s.currentRevision);
  assert.equal(r.hash(), rHash);
  assert.deepStrictEqual(history(r), rHist);
  const again = newStore();
  again.restore(snap);
  assert.equal(again.hash(), sHash);
  assert.deepStrictEqual(history(again), sHist);
});

test('restore never moves the current revision below the compaction revision', () => {
  const s = newStore();
  s.put({ key: b('a') });
  const snap = { ...s.snapshot(), currentRev: 1, compactRev: 2 };
  const r = newStore();
  r.restore(snap);
  assert.equal(r.currentRevision, 2);
});

test('checkValid stays clean through a long workload', () => {
  for (const seed of [21, 22, 23, 24]) {
    const s = newStore();
    for (const op of workload(seed, 400)) {
      op(s);
      assert.equal(s.checkValid(), undefined);
    }
  }
});

test('hash at a revision follows HashKV: at or below the compaction point is compacted, above current is future', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  s.put({ key: b('a'), value: b('2') }); // 3
  const at2 = s.hash(2);
  assert.notEqual(at2, s.hash(3));
  assert.equal(s.hash(0), s.hash(3));
  expectError(() => s.hash(4), ErrFutureRev);
  s.compact(2);
  expectError(() => s.hash(2), ErrCompacted);
  assert.equal(typeof s.hash(3), 'number');
});
