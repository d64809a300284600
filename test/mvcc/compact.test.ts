import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrCompacted, ErrFutureRev, MvccStore, text, type RangeResponse } from '../../src/index.js';
import { assertUnchanged, b, expectError, generations, get, kv, NUL } from './helpers.js';

/**
 * key_index.go's doc example, put(1) put(2) tomb(3) put(4) tomb(5), shifted by 10 because revision 1 is
 * the empty store: other-key puts fill revisions 2..10, then "k" is written at 11, 12, 13t, 14, 15t, and
 * one more filler makes 16 the current revision. Doc revision d is store revision d + 10.
 */
function docExample(etcdVersion?: '3.4'): MvccStore {
  const s = etcdVersion === undefined ? new MvccStore() : new MvccStore({ etcdVersion });
  for (let r = 2; r <= 10; r++) s.put({ key: b('filler'), value: b(String(r)) });
  s.put({ key: b('k'), value: b('1') }); // 11
  s.put({ key: b('k'), value: b('2') }); // 12
  s.deleteRange({ key: b('k') }); // 13
  s.put({ key: b('k'), value: b('4') }); // 14
  s.deleteRange({ key: b('k') }); // 15
  s.put({ key: b('filler'), value: b('16') }); // 16
  assert.equal(s.currentRevision, 16);
  assert.deepStrictEqual(generations(s, 'k'), [['11', '12', '13t'], ['14', '15t'], []]);
  return s;
}

function readsFrom(s: MvccStore, from: number): Map<number, RangeResponse> {
  const m = new Map<number, RangeResponse>();
  for (let r = from; r <= s.currentRevision; r++) m.set(r, s.range({ key: NUL, rangeEnd: NUL, revision: r }));
  return m;
}

/** Compacts at `at` and checks reads: identical from `at` on, ErrCompacted below. */
function compactAndCheckReads(s: MvccStore, at: number): void {
  const before = readsFrom(s, at);
  assert.deepStrictEqual(s.compact(at), { revision: s.currentRevision });
  assert.equal(s.compactRevision, at);
  assert.deepStrictEqual(readsFrom(s, at), before);
  for (let r = 1; r < at; r++) expectError(() => s.range({ key: b('k'), revision: r }), ErrCompacted);
  assert.equal(s.checkValid(), undefined);
}

const DOC: [doc: number, kept: string[][] | undefined][] = [
  [2, [['12', '13t'], ['14', '15t'], []]],
  [4, [['14', '15t'], []]],
  [5, [['15t'], []]],
  [6, undefined],
];

for (const [doc, kept] of DOC) {
  test(`key_index.go doc example: compact(${doc}) keeps ${JSON.stringify(kept)}`, () => {
    const s = docExample();
    compactAndCheckReads(s, doc + 10);
    assert.deepStrictEqual(generations(s, 'k'), kept);
  });
}

test('key_index.go doc example, compacting at 2, 4, 5, 6 in sequence', () => {
  const s = docExample();
  for (const [doc, kept] of DOC) {
    compactAndCheckReads(s, doc + 10);
    assert.deepStrictEqual(generations(s, 'k'), kept, `after compact(${doc})`);
  }
  assert.deepStrictEqual(generations(s, 'filler'), [['16']]);
});

test('values survive compaction: a read at the compaction revision sees the newest value at or before it', () => {
  const s = docExample();
  s.compact(12);
  assert.deepStrictEqual(get(s, 'k', 12), kv('k', '2', 11, 12, 2));
  assert.equal(get(s, 'k', 13), undefined);
  assert.deepStrictEqual(get(s, 'k', 14), kv('k', '4', 14, 14, 1));
  assert.deepStrictEqual(get(s, 'filler', 12), kv('filler', '10', 2, 10, 9));
});

test('compaction between a key revisions keeps the newest revision at or below it', () => {
  const s = new MvccStore();
  // k at even revisions 2, 4, 6(tomb), 8, 10(tomb); fillers at odd ones.
  s.put({ key: b('k'), value: b('2') }); // 2
  s.put({ key: b('f') }); // 3
  s.put({ key: b('k'), value: b('4') }); // 4
  s.put({ key: b('f') }); // 5
  s.deleteRange({ key: b('k') }); // 6
  s.put({ key: b('f') }); // 7
  s.put({ key: b('k'), value: b('8') }); // 8
  s.put({ key: b('f') }); // 9
  s.deleteRange({ key: b('k') }); // 10
  s.put({ key: b('f') }); // 11
  const steps: [number, string[][] | undefined][] = [
    [3, [['2', '4', '6t'], ['8', '10t'], []]],
    [5, [['4', '6t'], ['8', '10t'], []]],
    [7, [['8', '10t'], []]],
    [9, [['8', '10t'], []]],
    [10, [['10t'], []]],
    [11, undefined],
  ];
  for (const [at, kept] of steps) {
    compactAndCheckReads(s, at);
    assert.deepStrictEqual(generations(s, 'k'), kept, `compact(${at})`);
  }
  assert.deepStrictEqual(generations(s, 'f'), [['11']]);
});

test('a live key keeps only its newest revision at or below the compaction revision', () => {
  const s = new MvccStore();
  for (let i = 0; i < 5; i++) s.put({ key: b('k'), value: b(String(i)) }); // 2..6
  compactAndCheckReads(s, 4);
  assert.deepStrictEqual(generations(s, 'k'), [['4', '5', '6']]);
  compactAndCheckReads(s, 6);
  assert.deepStrictEqual(generations(s, 'k'), [['6']]);
  assert.deepStrictEqual(get(s, 'k'), kv('k', '4', 2, 6, 5));
});

test('a fully deleted key compacted past its tombstone leaves the index', () => {
  const s = new MvccStore();
  s.put({ key: b('gone') }); // 2
  s.deleteRange({ key: b('gone') }); // 3
  s.put({ key: b('other') }); // 4
  s.compact(4);
  assert.equal(generations(s, 'gone'), undefined);
  assert.equal(s.storage.index.size, 1);
  assert.equal(s.checkValid(), undefined);
  // Putting it again starts from scratch.
  s.put({ key: b('gone'), value: b('back') }); // 5
  assert.deepStrictEqual(get(s, 'gone'), kv('gone', 'back', 5, 5, 1));
});

test('compact errors: at or below the compacted revision ErrCompacted, above current ErrFutureRev; nothing changes', () => {
  const s = new MvccStore();
  assertUnchanged(s, ErrFutureRev, () => s.compact(2));
  assertUnchanged(s, ErrCompacted, () => s.compact(-1));
  assertUnchanged(s, ErrCompacted, () => s.compact(-5));
  // The very first Compact(0) succeeds (compactRev starts at -1).
  assert.deepStrictEqual(s.compact(0), { revision: 1 });
  assert.equal(s.compactRevision, 0);
  assertUnchanged(s, ErrCompacted, () => s.compact(0));
  assert.deepStrictEqual(s.compact(1), { revision: 1 });
  assertUnchanged(s, ErrCompacted, () => s.compact(1));
  s.put({ key: b('a') }); // 2
  s.put({ key: b('a') }); // 3
  s.compact(3);
  assertUnchanged(s, ErrCompacted, () => s.compact(2));
  assertUnchanged(s, ErrCompacted, () => s.compact(3));
  assertUnchanged(s, ErrFutureRev, () => s.compact(4));
  assert.equal(s.compactRevision, 3);
});

test('compacting at the current revision on a fresh store (1) is allowed', () => {
  const s = new MvccStore();
  s.compact(1);
  assert.equal(s.compactRevision, 1);
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, revision: 1 }), { revision: 1, kvs: [], more: false, count: 0 });
});

test('eventsAt is empty below the compaction revision and intact from it on', () => {
  const s = new MvccStore();
  for (let i = 2; i <= 8; i++) s.put({ key: b(`k${i}`) });
  const before = new Map<number, readonly unknown[]>();
  for (let r = 0; r <= 9; r++) before.set(r, s.eventsAt(r));
  assert.equal(s.eventsAt(0).length, 0);
  assert.equal(s.eventsAt(1).length, 0);
  assert.equal(s.eventsAt(9).length, 0);
  s.compact(5);
  for (let r = 0; r < 5; r++) assert.deepStrictEqual(s.eventsAt(r), [], `eventsAt(${r})`);
  for (let r = 5; r <= 9; r++) assert.deepStrictEqual(s.eventsAt(r), before.get(r), `eventsAt(${r})`);
  s.compact(7);
  assert.deepStrictEqual(s.eventsAt(6), []);
  assert.equal(text(s.eventsAt(7)[0]!.kv.key), 'k7');
  // New writes keep being logged after compaction.
  s.put({ key: b('late') });
  assert.equal(text(s.eventsAt(9)[0]!.kv.key), 'late');
});

test('a tombstone exactly at the compaction revision: kept by default (etcd >= 3.5/3.6), dropped with etcdVersion 3.4', () => {
  for (const version of [undefined, '3.4'] as const) {
    const s = version === undefined ? new MvccStore() : new MvccStore({ etcdVersion: version });
    s.put({ key: b('k'), value: b('v') }); // 2
    s.txn({ success: [{ requestDeleteRange: { key: b('k') } }, { requestPut: { key: b('other') } }] }); // 3
    s.put({ key: b('later') }); // 4
    s.compact(3);
    const events = s.eventsAt(3).map((e) => `${e.type} ${text(e.kv.key)}`);
    if (version === undefined) {
      assert.deepStrictEqual(generations(s, 'k'), [['3t'], []]);
      assert.deepStrictEqual(events, ['DELETE k', 'PUT other']);
    } else {
      assert.equal(generations(s, 'k'), undefined);
      assert.deepStrictEqual(events, ['PUT other']);
    }
    // Reads agree either way.
    assert.equal(get(s, 'k', 3), undefined);
    assert.equal(get(s, 'k', 4), undefined);
    assert.equal(s.checkValid(), undefined);
  }
});

test('etcdVersion 3.4 on the doc example: compact(5) removes the key entirely', () => {
  const s = docExample('3.4');
  compactAndCheckReads(s, 15);
  assert.equal(generations(s, 'k'), undefined);
  const d = docExample('3.4');
  compactAndCheckReads(d, 12);
  assert.deepStrictEqual(generations(d, 'k'), [['12', '13t'], ['14', '15t'], []]);
  compactAndCheckReads(d, 14);
  assert.deepStrictEqual(generations(d, 'k'), [['14', '15t'], []]);
});

test('compaction keeps count and range results at the current revision', () => {
  const s = docExample();
  const cur = s.range({ key: NUL, rangeEnd: NUL });
  s.compact(16);
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL }), cur);
  assert.equal(s.storage.index.size, 1);
});
