/**
 * Compaction costs what it removes (store.ts): the log drops its compacted prefix in place, and the index
 * compacts only the keys that changed in the compacted span, instead of walking every key. These tests
 * hold that shortcut to the full walk: a store restored from a snapshot walks its whole index at its next
 * compaction, so after every compaction the incrementally compacted store must equal a copy restored from
 * its state just before and compacted at the same revision — keys, revisions, generations, the log that
 * watchers replay, both hashes — under both of etcd's tombstone rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrCompacted, MvccStore, type EtcdVersion, type RequestOp } from '../../src/index.js';
import { SimRandom } from '../../src/sim/random.js';
import { b, expectError, generations, NUL } from './helpers.js';

function key(i: number): Uint8Array {
  return b(`k${String(i).padStart(4, '0')}`);
}

/** Compacts `s` at `rev`, and a restored copy of it (which walks its whole index) likewise; they must agree. */
function compactBothWays(s: MvccStore, rev: number, version: EtcdVersion): void {
  const reference = new MvccStore({ etcdVersion: version });
  reference.restore(s.snapshot());
  s.compact(rev);
  reference.compact(rev);
  assert.equal(s.checkValid(), undefined, `checkValid after compact(${rev})`);
  assert.deepStrictEqual(s.snapshot(), reference.snapshot(), `state after compact(${rev})`);
  assert.deepStrictEqual(s.hashKV(), reference.hashKV(), `HashKV after compact(${rev})`);
  const at = s.compactRevision + 1 + Math.floor((s.currentRevision - s.compactRevision) / 2);
  if (at <= s.currentRevision) assert.deepStrictEqual(s.hashKV(at), reference.hashKV(at), `HashKV(${at}) after compact(${rev})`);
  assert.deepStrictEqual(s.eventsAt(rev), reference.eventsAt(rev), `events at the compaction revision ${rev}`);
  assert.deepStrictEqual(s.eventsAt(rev - 1), [], `events below the compaction revision ${rev}`);
}

for (const version of ['3.5', '3.7'] as const) {
  test(`compacting small slices of a long history equals compacting by a walk of the whole index (etcd ${version})`, () => {
    const keys = 600;
    const rnd = new SimRandom(19).fork(version);
    const s = new MvccStore({ etcdVersion: version });
    for (let i = 0; i < keys; i++) s.put({ key: key(i), value: b('0') });
    let compactions = 0;
    for (let step = 0; step < 900; step++) {
      const k = rnd.nextInt(0, keys - 1);
      const kind = rnd.nextInt(0, 9);
      if (kind <= 3) s.put({ key: key(k), value: b(String(step)) });
      else if (kind === 4) s.deleteRange({ key: key(k) });
      else if (kind === 5) s.deleteRange({ key: key(k), rangeEnd: key(k + rnd.nextInt(1, 4)) });
      else if (kind === 6) {
        // A key put, then deleted by a "\0"-ended delete (which etcd's duplicate-key check lets through),
        // in one txn: two sub-revisions of one revision; and another key put.
        const last = keys - 1 - rnd.nextInt(0, 3);
        const ops: RequestOp[] = [
          { requestPut: { key: key(last), value: b('t') } },
          { requestDeleteRange: { key: key(last), rangeEnd: NUL } },
          { requestPut: { key: key(k), value: b('u') } },
        ];
        s.txn({ compare: [], success: ops });
      } else if (kind === 7) {
        // A txn that fails mid-apply is rolled back, popping revisions off keyIndexes compaction trimmed.
        s.put({ key: key(k), value: b('live') });
        const before = s.snapshot();
        const ops: RequestOp[] = [
          { requestPut: { key: key((k + 7) % keys), value: b('r') } },
          { requestDeleteRange: { key: key(k), rangeEnd: NUL } },
          { requestPut: { key: key(k), ignoreValue: true } },
        ];
        assert.throws(() => s.txn({ compare: [], success: ops }));
        assert.deepStrictEqual(s.snapshot(), before, 'a rejected txn changes nothing');
      } else {
        // Small slices, sometimes just the newest revision or right behind the last compaction.
        const lo = s.compactRevision + 1;
        const choice = rnd.nextInt(0, 3);
        const rev = choice === 0 ? s.currentRevision : choice === 1 ? lo : Math.min(s.currentRevision, lo + rnd.nextInt(0, 30));
        if (lo <= s.currentRevision) {
          compactBothWays(s, rev, version);
          compactions++;
        }
      }
    }
    assert.ok(compactions > 100, `${compactions} compactions`);
    expectError(() => s.compact(s.compactRevision), ErrCompacted);
  });
}

test('a key with a long history keeps exactly its revisions from the compaction point on, compacted a few at a time', () => {
  const s = new MvccStore();
  // Revisions 2..301 all change one key; every 50th is a delete.
  const isDelete = (r: number): boolean => (r - 2) % 50 === 49;
  for (let r = 2; r <= 301; r++) {
    if (isDelete(r)) s.deleteRange({ key: b('hot') });
    else s.put({ key: b('hot'), value: b(String(r)) });
  }
  s.put({ key: b('cold'), value: b('x') }); // 302
  for (let rev = 3; rev <= 301; rev += 7) {
    s.compact(rev);
    assert.equal(s.checkValid(), undefined);
    // Every revision changes `hot`, so what a read at `rev` sees is revision `rev` itself: it and everything
    // after it stay (a delete exactly at the compaction revision too, by etcd 3.6's rule).
    const expected: string[] = [];
    for (let r = rev; r <= 301; r++) expected.push(isDelete(r) ? `${r}t` : `${r}`);
    assert.deepStrictEqual(generations(s, 'hot')!.flat(), expected, `after compact(${rev})`);
    for (let at = rev; at <= 302; at += 5) {
      const got = s.range({ key: b('hot'), revision: at }).kvs[0]?.modRevision;
      const want = at <= 301 && !isDelete(at) ? at : undefined;
      assert.equal(got, want, `hot at ${at} after compact(${rev})`);
    }
  }
  s.compact(302); // the last change of `hot` is a delete below 302: the key leaves the index
  assert.equal(generations(s, 'hot'), undefined);
  assert.deepStrictEqual(s.range({ key: NUL, rangeEnd: NUL }).kvs.map((kv) => kv.modRevision), [302]);
  assert.equal(s.checkValid(), undefined);
});
