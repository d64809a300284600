/**
 * MvccStore.hashKV is etcd's HashKV value bit for bit. The figures below are what `etcdctl endpoint hashkv
 * --rev N` printed against a fresh etcd 3.4.23 for the same commands (the HashKV algorithm is the same in
 * 3.4 through 3.7: members of different versions compare it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrCompacted, ErrFutureRev, MvccStore } from '../../src/index.js';
import { b, expectError, FakeLessor } from './helpers.js';

/** put a 1; put b 2; txn {put c 3, put d 4, del a}; del b; put c 33 — revisions 2..6. */
function history(etcdVersion: '3.4' | '3.7' = '3.7'): MvccStore {
  const s = new MvccStore({ etcdVersion });
  s.put({ key: b('a'), value: b('1') });
  s.put({ key: b('b'), value: b('2') });
  s.txn({
    success: [
      { requestPut: { key: b('c'), value: b('3') } },
      { requestPut: { key: b('d'), value: b('4') } },
      { requestDeleteRange: { key: b('a') } },
    ],
  });
  s.deleteRange({ key: b('b') });
  s.put({ key: b('c'), value: b('33') });
  return s;
}

test('an empty store hashes the bucket name alone, as etcd', () => {
  const s = new MvccStore();
  assert.deepEqual(s.hashKV(), { hash: 1084519789, hashRevision: 1, compactRevision: -1 });
  assert.equal(s.hashKV(1).hash, 1084519789);
});

test('hashKV at every revision of a history with a multi-write txn equals etcd 3.4.23’s', () => {
  const s = history();
  const etcd: Record<number, number> = { 2: 2587454935, 3: 1827592406, 4: 3973566003, 5: 2264633923, 6: 1048272988 };
  for (const [rev, hash] of Object.entries(etcd)) assert.equal(s.hashKV(Number(rev)).hash, hash, `hash at ${rev}`);
  assert.deepEqual(s.hashKV(), { hash: 1048272988, hashRevision: 6, compactRevision: -1 });
});

for (const version of ['3.4', '3.7'] as const) {
  test(`after compactions (kept sub-revisions, tombstones at and below the compaction point): etcd 3.4.23’s hashes (rules of ${version})`, () => {
    const s = history(version);
    s.compact(4);
    assert.deepEqual(s.hashKV(), { hash: 3872755059, hashRevision: 6, compactRevision: 4 });
    assert.equal(s.hashKV(5).hash, 3931687247);
    assert.equal(s.hashKV(6).hash, 3872755059);
    // HashKV refuses the compaction revision itself (Range may read it).
    expectError(() => s.hashKV(4), ErrCompacted);
    expectError(() => s.hashKV(7), ErrFutureRev);
    s.put({ key: b('e'), value: b('5') });
    assert.equal(s.hashKV().hash, 3752830889);
    s.compact(5); // at b's delete
    assert.equal(s.hashKV().hash, 1669462512);
    s.deleteRange({ key: b('c') });
    s.compact(8); // at c's delete: a tombstone at the compaction point never counts while Keep names other keys
    assert.deepEqual(s.hashKV(), { hash: 1818996308, hashRevision: 8, compactRevision: 8 });
  });
}

test('a tombstone kept at the compaction point counts only when Keep names nothing (3.6+; 3.4 drops it)', () => {
  // From etcd's source (unsafeHashByRev skips the keep filter when Keep(compactRev) is empty); 3.4 has
  // already removed the tombstone from its backend, so its hash is the empty store's.
  const build = (v: '3.4' | '3.7'): MvccStore => {
    const s = new MvccStore({ etcdVersion: v });
    s.put({ key: b('a'), value: b('1') });
    s.deleteRange({ key: b('a') });
    s.compact(3);
    return s;
  };
  assert.equal(build('3.4').hashKV().hash, 1084519789);
  assert.notEqual(build('3.7').hashKV().hash, 1084519789);
});

test('hashKV depends on the stored value and the lease', () => {
  const h = (value: string, lease: bigint): number => {
    const s = new MvccStore({ lessor: new FakeLessor([1n, 2n ** 62n + 5n]) });
    s.put({ key: b('k'), value: b(value), lease });
    return s.hashKV().hash;
  };
  const hashes = new Set([h('v', 0n), h('w', 0n), h('v', 1n), h('v', 2n ** 62n + 5n), h('', 0n)]);
  assert.equal(hashes.size, 5);
  assert.equal(h('v', 1n), h('v', 1n));
});

test('a restored store reports the same hashKV (sub-revisions travel with the snapshot)', () => {
  const s = history();
  s.compact(4);
  const r = new MvccStore();
  r.restore(s.snapshot());
  assert.deepEqual(r.hashKV(), s.hashKV());
  assert.equal(r.hashKV(5).hash, 3931687247);
});
