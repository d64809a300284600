import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, type Event } from '../../src/index.js';
import { b, get, NUL } from './helpers.js';

test('a fresh store is at revision 1 with nothing compacted and no keys', () => {
  const s = new MvccStore();
  assert.equal(s.currentRevision, 1);
  assert.equal(s.compactRevision, -1);
  const r = s.range({ key: NUL, rangeEnd: NUL });
  assert.deepStrictEqual(r, { revision: 1, kvs: [], more: false, count: 0 });
  assert.equal(s.checkValid(), undefined);
});

test('each write takes main revision current+1 and moves the current revision', () => {
  const s = new MvccStore();
  assert.equal(s.put({ key: b('a'), value: b('1') }).revision, 2);
  assert.equal(s.currentRevision, 2);
  assert.equal(s.put({ key: b('b'), value: b('1') }).revision, 3);
  assert.equal(s.deleteRange({ key: b('a') }).revision, 4);
  assert.equal(s.currentRevision, 4);
  const t = s.txn({ success: [{ requestPut: { key: b('c') } }] });
  assert.equal(t.revision, 5);
  assert.equal(s.currentRevision, 5);
});

test('a put always takes a new revision, even with an identical value', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('same') });
  assert.equal(s.put({ key: b('a'), value: b('same') }).revision, 3);
  assert.equal(s.put({ key: b('a'), value: b('same') }).revision, 4);
  const kv = get(s, 'a');
  assert.equal(kv?.modRevision, 4);
  assert.equal(kv?.version, 3);
  assert.equal(kv?.createRevision, 2);
});

test('a delete that matches nothing takes no revision and reports the current one', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  const h = s.hash();
  assert.deepStrictEqual(s.deleteRange({ key: b('zzz') }), { revision: 2, deleted: 0, prevKvs: [] });
  assert.deepStrictEqual(s.deleteRange({ key: b('b'), rangeEnd: b('z') }), { revision: 2, deleted: 0, prevKvs: [] });
  s.deleteRange({ key: b('a') });
  assert.equal(s.currentRevision, 3);
  // Deleting an already deleted key is also a no-op.
  assert.deepStrictEqual(s.deleteRange({ key: b('a') }), { revision: 3, deleted: 0, prevKvs: [] });
  assert.equal(s.currentRevision, 3);
  assert.notEqual(s.hash(), h);
});

test('read-only and no-op txns take no revision', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') });
  const ro = s.txn({ success: [{ requestRange: { key: b('a') } }] });
  assert.equal(ro.revision, 2);
  assert.equal(s.currentRevision, 2);
  const empty = s.txn({});
  assert.deepStrictEqual(empty, { revision: 2, succeeded: true, responses: [] });
  const failedEmpty = s.txn({ compare: [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 9 }] });
  assert.deepStrictEqual(failedEmpty, { revision: 2, succeeded: false, responses: [] });
  const deleteNothing = s.txn({ success: [{ requestDeleteRange: { key: b('nope') } }, { requestRange: { key: b('a') } }] });
  assert.equal(deleteNothing.revision, 2);
  assert.equal(s.currentRevision, 2);
  assert.equal(s.eventsAt(3).length, 0);
});

test('range and compact do not move the current revision', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  s.put({ key: b('a') });
  s.range({ key: b('a'), revision: 2 });
  assert.deepStrictEqual(s.compact(2), { revision: 3 });
  assert.equal(s.currentRevision, 3);
  assert.equal(s.compactRevision, 2);
});

test('a multi-op txn takes one revision with its changes in op order', () => {
  const s = new MvccStore();
  s.put({ key: b('x') });
  const r = s.txn({
    success: [{ requestPut: { key: b('b'), value: b('1') } }, { requestPut: { key: b('a'), value: b('2') } }, { requestDeleteRange: { key: b('x') } }],
  });
  assert.equal(r.revision, 3);
  assert.equal(s.currentRevision, 3);
  const evs = s.eventsAt(3);
  assert.deepStrictEqual(
    evs.map((e) => [e.type, Buffer.from(e.kv.key).toString(), e.kv.modRevision]),
    [
      ['PUT', 'b', 3],
      ['PUT', 'a', 3],
      ['DELETE', 'x', 3],
    ],
  );
});

test('subscribers see each committed revision once, with its events, and nothing for no-ops', () => {
  const s = new MvccStore();
  const seen: [number, readonly Event[]][] = [];
  const off = s.subscribe((rev, evs) => seen.push([rev, evs]));
  s.put({ key: b('a') });
  s.deleteRange({ key: b('nothing') });
  s.txn({ success: [{ requestRange: { key: b('a') } }] });
  s.txn({ success: [{ requestPut: { key: b('b') } }, { requestPut: { key: b('c') } }] });
  s.deleteRange({ key: b('a'), rangeEnd: b('c') });
  assert.deepStrictEqual(
    seen.map(([rev, evs]) => [rev, evs.map((e) => `${e.type} ${Buffer.from(e.kv.key).toString()}`)]),
    [
      [2, ['PUT a']],
      [3, ['PUT b', 'PUT c']],
      [4, ['DELETE a', 'DELETE b']],
    ],
  );
  off();
  s.put({ key: b('z') });
  assert.equal(seen.length, 3);
});
