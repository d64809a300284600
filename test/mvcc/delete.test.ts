import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrEmptyKey, MvccStore, prefixEnd, text } from '../../src/index.js';
import { assertUnchanged, b, generations, get, keysOf, kv, NUL } from './helpers.js';

function fixture(): MvccStore {
  const s = new MvccStore();
  for (const k of ['a', 'b', 'b/1', 'b/2', 'c', 'd']) s.put({ key: b(k), value: b(k.toUpperCase()) }); // revisions 2..7
  return s;
}

function live(s: MvccStore): string[] {
  return keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs);
}

test('single key', () => {
  const s = fixture();
  assert.deepStrictEqual(s.deleteRange({ key: b('b') }), { revision: 8, deleted: 1, prevKvs: [] });
  assert.deepStrictEqual(live(s), ['a', 'b/1', 'b/2', 'c', 'd']);
  assert.equal(s.currentRevision, 8);
});

test('[key, range_end)', () => {
  const s = fixture();
  assert.deepStrictEqual(s.deleteRange({ key: b('b'), rangeEnd: b('c') }), { revision: 8, deleted: 3, prevKvs: [] });
  assert.deepStrictEqual(live(s), ['a', 'c', 'd']);
});

test('prefix', () => {
  const s = fixture();
  assert.equal(s.deleteRange({ key: b('b/'), rangeEnd: prefixEnd(b('b/')) }).deleted, 2);
  assert.deepStrictEqual(live(s), ['a', 'b', 'c', 'd']);
});

test('from key ("\\0") and all keys', () => {
  const s = fixture();
  assert.equal(s.deleteRange({ key: b('c'), rangeEnd: NUL }).deleted, 2);
  assert.deepStrictEqual(live(s), ['a', 'b', 'b/1', 'b/2']);
  assert.deepStrictEqual(s.deleteRange({ key: NUL, rangeEnd: NUL }), { revision: 9, deleted: 4, prevKvs: [] });
  assert.deepStrictEqual(live(s), []);
});

test('key >= range_end deletes nothing and takes no revision', () => {
  const s = fixture();
  assert.deepStrictEqual(s.deleteRange({ key: b('c'), rangeEnd: b('a') }), { revision: 7, deleted: 0, prevKvs: [] });
  assert.deepStrictEqual(s.deleteRange({ key: b('c'), rangeEnd: b('c') }), { revision: 7, deleted: 0, prevKvs: [] });
  assert.equal(live(s).length, 6);
});

test('prev_kv returns the deleted KeyValues in key order', () => {
  const s = fixture();
  s.put({ key: b('b/1'), value: b('X') }); // 8
  const r = s.deleteRange({ key: b('b'), rangeEnd: b('c'), prevKv: true });
  assert.deepStrictEqual(r, { revision: 9, deleted: 3, prevKvs: [kv('b', 'B', 3, 3, 1), kv('b/1', 'X', 4, 8, 2), kv('b/2', 'B/2', 5, 5, 1)] });
  // prev_kv of a delete that matches nothing is empty.
  assert.deepStrictEqual(s.deleteRange({ key: b('b'), prevKv: true }), { revision: 9, deleted: 0, prevKvs: [] });
});

test('all deleted keys share one revision; each gets a tombstone and a DELETE event in key order', () => {
  const s = fixture();
  s.deleteRange({ key: NUL, rangeEnd: NUL });
  const evs = s.eventsAt(8);
  assert.deepStrictEqual(
    evs.map((e) => [e.type, text(e.kv.key), e.kv.modRevision, e.kv.createRevision, e.kv.version]),
    ['a', 'b', 'b/1', 'b/2', 'c', 'd'].map((k) => ['DELETE', k, 8, 0, 0]),
  );
  assert.deepStrictEqual(generations(s, 'b/2'), [['5', '8t'], []]);
  assert.equal(s.checkValid(), undefined);
  // History is intact.
  assert.deepStrictEqual(get(s, 'd', 7), kv('d', 'D', 7, 7, 1));
  assert.equal(get(s, 'd', 8), undefined);
});

test('a key re-created after a delete starts a new generation with version 1', () => {
  const s = fixture();
  s.deleteRange({ key: b('a') }); // 8
  s.put({ key: b('a'), value: b('again') }); // 9
  assert.deepStrictEqual(get(s, 'a'), kv('a', 'again', 9, 9, 1));
});

test('empty key: ErrEmptyKey, nothing changes', () => {
  const s = fixture();
  assertUnchanged(s, ErrEmptyKey, () => s.deleteRange({ key: new Uint8Array(0) }));
  assertUnchanged(s, ErrEmptyKey, () => s.deleteRange({ key: new Uint8Array(0), rangeEnd: NUL }));
});
