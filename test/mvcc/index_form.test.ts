/**
 * The index keeps a key with one revision in its single-revision form (tree_index.ts) and makes a keyIndex
 * object only when a write gives the key a second revision. Reads — the hashes, a snapshot, checkValid,
 * ranges, txn compares, the watch's prevKv lookup — must leave that form alone, or a read of a large
 * store would grow it by an object per key for good.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, type RequestOp } from '../../src/index.js';
import { b, NUL } from './helpers.js';

const KEYS = 10_000;

function key(i: number): Uint8Array {
  return b(`k/${String(i).padStart(5, '0')}`);
}

/** A store of KEYS single-revision keys, and the index's count of keyIndex objects (0 to start with). */
function singleRevisionStore(): MvccStore {
  const s = new MvccStore();
  for (let i = 0; i < KEYS; i++) s.put({ key: key(i), value: b(`v${i}`) });
  assert.equal(s.storage.index.size, KEYS);
  assert.equal(s.storage.index.keyIndexCount(), 0, 'a put of a new key stores its KeyValue, not a keyIndex');
  return s;
}

test('hash, HashKV, snapshot and checkValid over 10k single-revision keys leave every key in single-revision form', () => {
  const s = singleRevisionStore();
  const rev = s.currentRevision;
  const digest = s.hash();
  const { hash } = s.hashKV();
  assert.equal(s.hashKV(rev - KEYS / 2).hashRevision, rev - KEYS / 2);
  const snap = s.snapshot();
  assert.equal(snap.keys.length, KEYS);
  assert.deepStrictEqual(snap.keys[7]!.revs.map((kv) => kv.modRevision), [9]);
  assert.equal(s.checkValid(), undefined);
  assert.equal(s.storage.index.keyIndexCount(), 0);
  // And the walks still read the same thing once keys do have keyIndexes.
  const copy = new MvccStore();
  copy.restore(snap);
  assert.equal(copy.storage.index.keyIndexCount(), KEYS, 'a restore builds keyIndexes');
  assert.equal(copy.hash(), digest);
  assert.equal(copy.hashKV().hash, hash);
});

test('ranges, single-key reads, txn compares and kvAt leave every key in single-revision form', () => {
  const s = singleRevisionStore();
  const rev = s.currentRevision;
  assert.equal(s.range({ key: NUL, rangeEnd: NUL }).count, KEYS);
  assert.equal(s.range({ key: NUL, rangeEnd: NUL, revision: rev - 10, sortTarget: 'MOD', sortOrder: 'DESCEND', limit: 3 }).kvs.length, 3);
  assert.equal(s.range({ key: b('k/'), rangeEnd: b('k0'), countOnly: true, minModRevision: 100 }).count, KEYS);
  for (let i = 0; i < KEYS; i += 97) {
    assert.equal(s.range({ key: key(i) }).count, 1);
    assert.equal(s.kvAt(key(i), rev)?.modRevision, i + 2);
  }
  const ops: RequestOp[] = [{ requestRange: { key: key(1) } }, { requestRange: { key: b('k/'), rangeEnd: b('k0'), keysOnly: true } }];
  const r = s.txn({
    compare: [
      { key: key(1), target: 'VERSION', result: 'EQUAL', version: 1 },
      { key: key(2), rangeEnd: key(900), target: 'MOD', result: 'LESS', modRevision: rev + 1 },
    ],
    success: ops,
  });
  assert.equal(r.succeeded, true);
  assert.equal(r.revision, rev, 'a read-only txn takes no revision');
  assert.equal(s.storage.index.keyIndexCount(), 0);
});

test('a write makes a keyIndex only for the keys it gives a second revision', () => {
  const s = singleRevisionStore();
  s.put({ key: key(5), value: b('again') });
  s.put({ key: key(6), ignoreValue: true, prevKv: true }); // ignore_value reads the key first
  s.deleteRange({ key: key(10), rangeEnd: key(13) });
  s.txn({ compare: [], success: [{ requestPut: { key: key(20), value: b('t') } }, { requestRange: { key: NUL, rangeEnd: NUL } }] });
  assert.equal(s.storage.index.keyIndexCount(), 6);
  s.hash();
  s.hashKV();
  s.snapshot();
  assert.equal(s.checkValid(), undefined);
  assert.equal(s.storage.index.keyIndexCount(), 6);
  // A compaction keeps the single-revision form too; keys it leaves with one revision stay keyIndexes.
  s.compact(s.currentRevision);
  assert.equal(s.storage.index.size, KEYS - 3);
  assert.equal(s.storage.index.keyIndexCount(), 3);
});
