import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrCompacted, ErrFutureRev, MvccStore, prefixEnd, type KeyValue, type SortOrder, type SortTarget } from '../../src/index.js';
import { assertUnchanged, b, keysOf, kv, NUL, valuesOf } from './helpers.js';

/**
 * State at revision 8:
 *   a = w  create 3 mod 5 version 2
 *   b = x  create 2 mod 8 version 3
 *   c = y  create 4 mod 4 version 1
 *   d = x  create 6 mod 6 version 1
 */
function fixture(): MvccStore {
  const s = new MvccStore();
  s.put({ key: b('b'), value: b('x') }); // 2
  s.put({ key: b('a'), value: b('z') }); // 3
  s.put({ key: b('c'), value: b('y') }); // 4
  s.put({ key: b('a'), value: b('w') }); // 5
  s.put({ key: b('d'), value: b('x') }); // 6
  s.put({ key: b('b'), value: b('v') }); // 7
  s.put({ key: b('b'), value: b('x') }); // 8
  return s;
}

test('single key: the key if live, else nothing', () => {
  const s = fixture();
  assert.deepStrictEqual(s.range({ key: b('a') }), { revision: 8, kvs: [kv('a', 'w', 3, 5, 2)], more: false, count: 1 });
  assert.deepStrictEqual(s.range({ key: b('aa') }), { revision: 8, kvs: [], more: false, count: 0 });
  // An empty range_end means the single key too.
  assert.deepStrictEqual(keysOf(s.range({ key: b('a'), rangeEnd: new Uint8Array(0) }).kvs), ['a']);
});

test('[key, range_end) is half-open', () => {
  const s = fixture();
  assert.deepStrictEqual(keysOf(s.range({ key: b('a'), rangeEnd: b('c') }).kvs), ['a', 'b']);
  assert.deepStrictEqual(keysOf(s.range({ key: b('b'), rangeEnd: b('c\0') }).kvs), ['b', 'c']);
  assert.deepStrictEqual(keysOf(s.range({ key: b('a0'), rangeEnd: b('zz') }).kvs), ['b', 'c', 'd']);
});

test('range_end "\\0" means every key >= key; key = range_end = "\\0" means every key', () => {
  const s = fixture();
  assert.deepStrictEqual(keysOf(s.range({ key: b('b'), rangeEnd: NUL }).kvs), ['b', 'c', 'd']);
  assert.deepStrictEqual(keysOf(s.range({ key: b('e'), rangeEnd: NUL }).kvs), []);
  const all = s.range({ key: NUL, rangeEnd: NUL });
  assert.deepStrictEqual(keysOf(all.kvs), ['a', 'b', 'c', 'd']);
  assert.equal(all.count, 4);
});

test('key >= range_end is an empty range', () => {
  const s = fixture();
  assert.deepStrictEqual(s.range({ key: b('c'), rangeEnd: b('a') }), { revision: 8, kvs: [], more: false, count: 0 });
  assert.deepStrictEqual(s.range({ key: b('b'), rangeEnd: b('b') }), { revision: 8, kvs: [], more: false, count: 0 });
});

test('prefix reads with prefixEnd', () => {
  const s = new MvccStore();
  for (const k of ['p', 'p/', 'p/1', 'p/2', 'p/2/x', 'p0', 'q', 'o']) s.put({ key: b(k) });
  assert.deepStrictEqual(keysOf(s.range({ key: b('p/'), rangeEnd: prefixEnd(b('p/')) }).kvs), ['p/', 'p/1', 'p/2', 'p/2/x']);
  assert.deepStrictEqual(keysOf(s.range({ key: b('p'), rangeEnd: prefixEnd(b('p')) }).kvs), ['p', 'p/', 'p/1', 'p/2', 'p/2/x', 'p0']);
  assert.deepStrictEqual(prefixEnd(b('p/')), b('p0'));
});

test('keys order by bytes, including 0x00, 0x80 and 0xff', () => {
  const s = new MvccStore();
  const k = (...bytes: number[]): Uint8Array => new Uint8Array(bytes);
  const keys = [k(0xff, 0x00), k(0x61, 0xff), k(0x00), k(0x61), k(0x61, 0x00), k(0x62), k(0x61, 0x01), k(0xff), k(0x61, 0xff, 0xff), k(0x61, 0x80), k(0x61, 0x7f)];
  for (const key of keys) s.put({ key, value: key });
  const sorted = [k(0x00), k(0x61), k(0x61, 0x00), k(0x61, 0x01), k(0x61, 0x7f), k(0x61, 0x80), k(0x61, 0xff), k(0x61, 0xff, 0xff), k(0x62), k(0xff), k(0xff, 0x00)];
  const all = s.range({ key: NUL, rangeEnd: NUL });
  assert.deepStrictEqual(all.kvs.map((e) => e.key), sorted);
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, sortTarget: 'KEY', sortOrder: 'DESCEND' }).kvs.map((e) => e.key), sorted.slice().reverse());
  // Prefix of "a": everything starting with 0x61.
  assert.deepStrictEqual(s.range({ key: k(0x61), rangeEnd: prefixEnd(k(0x61)) }).kvs.map((e) => e.key), sorted.slice(1, 8));
  // Prefix of "a\xff": prefixEnd drops the 0xff and increments → "b".
  assert.deepStrictEqual(prefixEnd(k(0x61, 0xff)), k(0x62));
  assert.deepStrictEqual(s.range({ key: k(0x61, 0xff), rangeEnd: prefixEnd(k(0x61, 0xff)) }).kvs.map((e) => e.key), [k(0x61, 0xff), k(0x61, 0xff, 0xff)]);
  // Prefix of "\xff": no end, so "\0" — every key >= "\xff".
  assert.deepStrictEqual(prefixEnd(k(0xff)), NUL);
  assert.deepStrictEqual(s.range({ key: k(0xff), rangeEnd: prefixEnd(k(0xff)) }).kvs.map((e) => e.key), [k(0xff), k(0xff, 0x00)]);
  // [a, a\0) is exactly "a".
  assert.deepStrictEqual(s.range({ key: k(0x61), rangeEnd: k(0x61, 0x00) }).kvs.map((e) => e.key), [k(0x61)]);
  // Single-key reads of keys with 0x00 / 0xff.
  assert.deepStrictEqual(s.range({ key: k(0x61, 0x00) }).kvs.map((e) => e.value), [k(0x61, 0x00)]);
  assert.deepStrictEqual(s.range({ key: k(0xff, 0x00) }).kvs.map((e) => e.value), [k(0xff, 0x00)]);
  // Sort by value (the same bytes) agrees with byte order.
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, sortTarget: 'VALUE', sortOrder: 'ASCEND' }).kvs.map((e) => e.key), sorted);
});

test('revision: <= 0 reads the current state; historical reads report the current revision', () => {
  const s = fixture();
  for (const revision of [0, -1, -100]) assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, revision }), s.range({ key: NUL, rangeEnd: NUL }));
  const at4 = s.range({ key: NUL, rangeEnd: NUL, revision: 4 });
  assert.equal(at4.revision, 8);
  assert.deepStrictEqual(at4.kvs, [kv('a', 'z', 3, 3, 1), kv('b', 'x', 2, 2, 1), kv('c', 'y', 4, 4, 1)]);
  assert.equal(at4.count, 3);
  const at1 = s.range({ key: NUL, rangeEnd: NUL, revision: 1 });
  assert.deepStrictEqual(at1, { revision: 8, kvs: [], more: false, count: 0 });
  assert.deepStrictEqual(valuesOf(s.range({ key: b('b'), revision: 7 }).kvs), ['v']);
  assert.deepStrictEqual(valuesOf(s.range({ key: b('b'), revision: 8 }).kvs), ['x']);
});

test('revision above current: ErrFutureRev; below compaction: ErrCompacted; exactly the compacted revision is readable', () => {
  const s = fixture();
  assertUnchanged(s, ErrFutureRev, () => s.range({ key: b('a'), revision: 9 }));
  assertUnchanged(s, ErrFutureRev, () => s.range({ key: NUL, rangeEnd: NUL, revision: 1000 }));
  s.compact(5);
  assertUnchanged(s, ErrCompacted, () => s.range({ key: b('a'), revision: 4 }));
  assertUnchanged(s, ErrCompacted, () => s.range({ key: NUL, rangeEnd: NUL, revision: 1, countOnly: true }));
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, revision: 5 }).kvs, [kv('a', 'w', 3, 5, 2), kv('b', 'x', 2, 2, 1), kv('c', 'y', 4, 4, 1)]);
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, revision: 6 }).kvs), ['a', 'b', 'c', 'd']);
  // Negative revisions still read the current state after compaction (plain Range).
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, revision: -1 }).kvs), ['a', 'b', 'c', 'd']);
});

test('limit cuts the result and sets more; count is the whole range', () => {
  const s = fixture();
  const all = { key: NUL, rangeEnd: NUL };
  assert.deepStrictEqual(s.range({ ...all, limit: 2 }), { revision: 8, kvs: [kv('a', 'w', 3, 5, 2), kv('b', 'x', 2, 8, 3)], more: true, count: 4 });
  assert.deepStrictEqual(s.range({ ...all, limit: 3 }).more, true);
  const exact = s.range({ ...all, limit: 4 });
  assert.equal(exact.kvs.length, 4);
  assert.equal(exact.more, false);
  assert.equal(s.range({ ...all, limit: 5 }).more, false);
  assert.equal(s.range({ ...all, limit: 0 }).kvs.length, 4);
  assert.deepStrictEqual(s.range({ key: b('a'), limit: 1 }), { revision: 8, kvs: [kv('a', 'w', 3, 5, 2)], more: false, count: 1 });
  // Historical read with a limit.
  const h = s.range({ ...all, revision: 4, limit: 1 });
  assert.deepStrictEqual(keysOf(h.kvs), ['a']);
  assert.equal(h.more, true);
  assert.equal(h.count, 3);
});

const ORDERS: Record<SortTarget, { asc: string[]; desc: string[] }> = {
  KEY: { asc: ['a', 'b', 'c', 'd'], desc: ['d', 'c', 'b', 'a'] },
  // Ties (c and d have version 1) keep key order in both directions.
  VERSION: { asc: ['c', 'd', 'a', 'b'], desc: ['b', 'a', 'c', 'd'] },
  CREATE: { asc: ['b', 'a', 'c', 'd'], desc: ['d', 'c', 'a', 'b'] },
  MOD: { asc: ['c', 'a', 'd', 'b'], desc: ['b', 'd', 'a', 'c'] },
  // Ties (b and d hold "x") keep key order in both directions.
  VALUE: { asc: ['a', 'b', 'd', 'c'], desc: ['c', 'b', 'd', 'a'] },
};

for (const [target, want] of Object.entries(ORDERS) as [SortTarget, { asc: string[]; desc: string[] }][]) {
  test(`sort by ${target}: ASCEND, DESCEND, and NONE`, () => {
    const s = fixture();
    const all = { key: NUL, rangeEnd: NUL, sortTarget: target };
    assert.deepStrictEqual(keysOf(s.range({ ...all, sortOrder: 'ASCEND' }).kvs), want.asc);
    assert.deepStrictEqual(keysOf(s.range({ ...all, sortOrder: 'DESCEND' }).kvs), want.desc);
    // NONE: key order for KEY, ascending for any other target.
    assert.deepStrictEqual(keysOf(s.range({ ...all, sortOrder: 'NONE' }).kvs), target === 'KEY' ? ORDERS.KEY.asc : want.asc);
    assert.deepStrictEqual(keysOf(s.range({ ...all }).kvs), target === 'KEY' ? ORDERS.KEY.asc : want.asc);
    // With an explicit order the limit applies after sorting the whole range.
    for (const order of ['ASCEND', 'DESCEND'] as SortOrder[]) {
      const r = s.range({ ...all, sortOrder: order, limit: 2 });
      assert.deepStrictEqual(keysOf(r.kvs), (order === 'ASCEND' ? want.asc : want.desc).slice(0, 2));
      assert.equal(r.more, true);
      assert.equal(r.count, 4);
    }
  });
}

/** Pages through [from, end) at `revision` in pages of `limit`, as listers do (next start: last key + "\0"). */
function pages(s: MvccStore, from: string, end: string, revision: number, limit: number, between: () => void = () => {}): { keys: string[]; count: number }[] {
  const out: { keys: string[]; count: number }[] = [];
  let key = b(from);
  for (;;) {
    const r = s.range({ key, rangeEnd: b(end), revision, limit });
    out.push({ keys: keysOf(r.kvs), count: r.count });
    if (!r.more) return out;
    key = Uint8Array.of(...r.kvs[r.kvs.length - 1]!.key, 0);
    between();
  }
}

test('a paged list at a fixed revision: each page counts the keys from its start to the end, whatever is written between pages', () => {
  const s = new MvccStore();
  for (const k of ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6']) s.put({ key: b(k) });
  s.deleteRange({ key: b('k5') });
  const at = s.currentRevision;
  let n = 0;
  // New keys inside the range, deletes and overwrites of keys not yet read: none of it is visible at `at`.
  const writes = [() => s.put({ key: b('k1a') }), () => s.deleteRange({ key: b('k4') }), () => s.put({ key: b('k3') }), () => s.compact(at)];
  const got = pages(s, 'k', 'l', at, 2, () => writes[n++ % writes.length]!());
  assert.deepStrictEqual(got, [
    { keys: ['k0', 'k1'], count: 6 },
    { keys: ['k2', 'k3'], count: 4 },
    { keys: ['k4', 'k6'], count: 2 },
  ]);
  // The same pages at the current revision see the writes.
  assert.deepStrictEqual(pages(s, 'k', 'l', s.currentRevision, 3), [
    { keys: ['k0', 'k1', 'k1a'], count: 6 },
    { keys: ['k2', 'k3', 'k6'], count: 3 },
  ]);
  // A page that starts at the next key itself, or between the last key and it, counts the same.
  assert.equal(s.range({ key: b('k1\0'), rangeEnd: b('l'), revision: at, limit: 2 }).count, 4);
  assert.equal(s.range({ key: b('k2'), rangeEnd: b('l'), revision: at, limit: 2 }).count, 4);
  assert.equal(s.range({ key: b('k1b'), rangeEnd: b('l'), revision: at, limit: 2 }).count, 4);
});

test('a restore forgets what paged reads learned: the same revision may then hold other keys', () => {
  const s = new MvccStore();
  s.put({ key: b('a') }); // 2
  const early = s.snapshot();
  for (const k of ['b', 'c', 'd', 'e']) s.put({ key: b(k) }); // 3..6
  assert.deepStrictEqual(pages(s, 'a', 'z', 6, 2).map((p) => p.count), [5, 3, 1]);
  s.restore(early);
  for (const k of ['b', 'b', 'b', 'c']) s.put({ key: b(k) }); // 3..6 again, other contents
  assert.deepStrictEqual(pages(s, 'a', 'z', 6, 2), [
    { keys: ['a', 'b'], count: 3 },
    { keys: ['c'], count: 1 },
  ]);
  // Where the list before the restore had its last page: e was live at 6 then, nothing is now.
  assert.deepStrictEqual(s.range({ key: b('d\0'), rangeEnd: b('z'), revision: 6, limit: 2 }), { revision: 6, kvs: [], more: false, count: 0 });
});

test('sort_order NONE with a non-KEY target sorts only the limit+1 keys read in key order (etcd reads with limit first)', () => {
  const s = fixture();
  // etcd only drops the limit for sort_order != NONE or a filter: it reads a, b (limit+1) and sorts those by mod.
  const r = s.range({ key: NUL, rangeEnd: NUL, sortTarget: 'MOD', limit: 1 });
  assert.deepStrictEqual(keysOf(r.kvs), ['a']);
  assert.equal(r.more, true);
  // With ASCEND the whole range is sorted first: c has the lowest mod revision.
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, sortTarget: 'MOD', sortOrder: 'ASCEND', limit: 1 }).kvs), ['c']);
  // NONE over the first three keys by MOD: a(5) c(4) b(8) → c, a.
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, sortTarget: 'MOD', limit: 2 }).kvs), ['c', 'a']);
});

test('min/max mod/create revision filters; count ignores them; limit applies after filtering', () => {
  const s = fixture();
  const all = { key: NUL, rangeEnd: NUL };
  const cases: [Partial<Record<'minModRevision' | 'maxModRevision' | 'minCreateRevision' | 'maxCreateRevision', number>>, string[]][] = [
    [{ minModRevision: 5 }, ['a', 'b', 'd']],
    [{ maxModRevision: 5 }, ['a', 'c']],
    [{ minModRevision: 5, maxModRevision: 5 }, ['a']],
    [{ minCreateRevision: 3 }, ['a', 'c', 'd']],
    [{ maxCreateRevision: 3 }, ['a', 'b']],
    [{ minCreateRevision: 4, maxCreateRevision: 4 }, ['c']],
    [{ minModRevision: 5, maxCreateRevision: 3 }, ['a', 'b']],
    [{ minModRevision: 9 }, []],
  ];
  for (const [filter, want] of cases) {
    const r = s.range({ ...all, ...filter });
    assert.deepStrictEqual(keysOf(r.kvs), want, JSON.stringify(filter));
    assert.equal(r.count, 4, `count ignores ${JSON.stringify(filter)}`);
    assert.equal(r.more, false);
  }
  // Filters then limit: a, b, d pass min mod 5 → the first passing key is a, and more is set.
  const lim = s.range({ ...all, minModRevision: 5, limit: 1 });
  assert.deepStrictEqual(keysOf(lim.kvs), ['a']);
  assert.equal(lim.more, true);
  assert.equal(lim.count, 4);
  // A filter lifts the index limit: c is the only key with create 4 though it is third in key order.
  const third = s.range({ ...all, minCreateRevision: 4, maxCreateRevision: 4, limit: 1 });
  assert.deepStrictEqual(keysOf(third.kvs), ['c']);
  assert.equal(third.more, false);
  // Filter + sort + limit.
  const fsl = s.range({ ...all, minModRevision: 5, sortTarget: 'MOD', sortOrder: 'DESCEND', limit: 2 });
  assert.deepStrictEqual(keysOf(fsl.kvs), ['b', 'd']);
  assert.equal(fsl.more, true);
  // Filters on a historical read use that revision's KeyValues.
  assert.deepStrictEqual(keysOf(s.range({ ...all, revision: 4, minModRevision: 3 }).kvs), ['a', 'c']);
});

test('keys_only drops values and keeps everything else', () => {
  const s = fixture();
  const r = s.range({ key: NUL, rangeEnd: NUL, keysOnly: true });
  const empty = new Uint8Array(0);
  const strip = (e: KeyValue): KeyValue => ({ ...e, value: empty });
  assert.deepStrictEqual(r.kvs, s.range({ key: NUL, rangeEnd: NUL }).kvs.map(strip));
  assert.equal(r.count, 4);
  // keys_only with a sort by value still sorts by the real values.
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, keysOnly: true, sortTarget: 'VALUE', sortOrder: 'DESCEND' }).kvs), ORDERS.VALUE.desc);
  // The store still holds the values.
  assert.deepStrictEqual(valuesOf(s.range({ key: b('a') }).kvs), ['w']);
});

test('count_only returns the count alone, ignoring limit', () => {
  const s = fixture();
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, countOnly: true }), { revision: 8, kvs: [], more: false, count: 4 });
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, countOnly: true, limit: 1 }), { revision: 8, kvs: [], more: false, count: 4 });
  assert.deepStrictEqual(s.range({ key: b('a'), rangeEnd: b('c'), countOnly: true, revision: 2 }), { revision: 8, kvs: [], more: false, count: 1 });
  assert.deepStrictEqual(s.range({ key: b('zz'), countOnly: true }), { revision: 8, kvs: [], more: false, count: 0 });
});

test('serializable is accepted and changes nothing', () => {
  const s = fixture();
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL, serializable: true }), s.range({ key: NUL, rangeEnd: NUL }));
});

test('deleted keys are not counted', () => {
  const s = fixture();
  s.deleteRange({ key: b('b') });
  const r = s.range({ key: NUL, rangeEnd: NUL, limit: 1 });
  assert.equal(r.count, 3);
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs), ['a', 'c', 'd']);
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL, revision: 8 }).kvs), ['a', 'b', 'c', 'd']);
});

test('tryPlainRange answers what range() answers for one key at the current revision, and declines an empty key', () => {
  const s = new MvccStore();
  s.put({ key: b('k'), value: b('1') });
  s.put({ key: b('k'), value: b('2') });
  s.deleteRange({ key: b('gone') });
  s.put({ key: b('gone'), value: b('x') });
  s.deleteRange({ key: b('gone') });
  for (const k of ['k', 'gone', 'never']) assert.deepStrictEqual(s.tryPlainRange(b(k)), s.range({ key: b(k) }), k);
  assert.equal(s.tryPlainRange(new Uint8Array(0)), undefined);
});
