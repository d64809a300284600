/**
 * The store keeps its revisions as records in columns (src/mvcc/history.ts) and builds a KeyValue when one is
 * read. What a reader was given must never change afterwards — not when the key is written again, not when
 * a compaction frees the record and a later put reuses its number, not when the value bytes' slab is dropped
 * — and what compaction drops must be freed, so a store that compacts holds no more records than it names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, text, type KeyValue } from '../../src/index.js';
import { b } from './helpers.js';

/** A value of `n` bytes, each `fill`. */
const bytesOf = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

test('a KeyValue once read stays as it was through later puts, compaction and the reuse of its record', () => {
  const s = new MvccStore();
  s.put({ key: b('k'), value: b('first'), lease: 0n });
  const got: KeyValue = s.range({ key: b('k') }).kvs[0]!;
  const big = bytesOf(5000, 7); // a value with a slab of its own
  s.put({ key: b('big'), value: big });
  const gotBig = s.range({ key: b('big') }).kvs[0]!;
  for (let i = 0; i < 3000; i++) s.put({ key: b(`k${i % 7}`), value: b(`other ${i}`) }); // several value slabs
  s.put({ key: b('k'), value: b('second') });
  s.deleteRange({ key: b('big') });
  s.compact(s.currentRevision);
  for (let i = 0; i < 3000; i++) s.put({ key: b(`n${i}`), value: bytesOf(40, i & 0xff) }); // reuses the freed records
  assert.equal(text(got.value), 'first');
  assert.deepEqual([got.createRevision, got.modRevision, got.version, got.lease], [2, 2, 1, 0n]);
  assert.equal(text(got.key), 'k');
  assert.deepEqual(gotBig.value, big);
  assert.equal(gotBig.modRevision, 3);
  assert.equal(text(s.range({ key: b('k') }).kvs[0]!.value), 'second');
  assert.equal(s.range({ key: b('big') }).count, 0);
  assert.equal(s.checkValid(), undefined);
});

test('a read of the newest revision is made once and kept until the key changes; a historical read sees the old revision and keeps nothing', () => {
  const s = new MvccStore();
  s.put({ key: b('k'), value: b('v1') });
  const one = s.range({ key: b('k') }).kvs[0]!;
  assert.equal(s.range({ key: b('k') }).kvs[0], one, 'the same read twice: one KeyValue');
  assert.equal(s.range({ key: b('a'), rangeEnd: b('z') }).kvs[0], one, 'a range reads the same one');
  s.put({ key: b('k'), value: b('v2') });
  const two = s.range({ key: b('k') }).kvs[0]!;
  assert.equal(text(two.value), 'v2');
  assert.equal(two.version, 2);
  const old = s.range({ key: b('k'), revision: 2 }).kvs[0]!;
  assert.deepEqual(old, one);
  assert.notEqual(s.range({ key: b('k'), revision: 2 }).kvs[0], old, 'a superseded revision keeps no KeyValue: no more are kept than keys');
  assert.equal(text(one.value), 'v1');
});

test('compaction frees what it drops: the history holds the records the index and the log name, no more', () => {
  const s = new MvccStore();
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 2000; i++) s.put({ key: b(`k${i % 100}`), value: bytesOf(100, round) });
    s.deleteRange({ key: b('k1'), rangeEnd: b('k2') });
    s.compact(s.currentRevision - 50);
    assert.equal(s.checkValid(), undefined, `round ${round}`);
  }
  s.compact(s.currentRevision);
  assert.equal(s.checkValid(), undefined);
  // One revision per live key, plus the changes of the compaction revision the log keeps.
  assert.ok(s.storage.history.heldRecords() <= s.retainedRevisions + 1, `${s.storage.history.heldRecords()} records held for ${s.retainedRevisions} revisions`);
});

test('a txn that fails midway gives its records back, and a snapshot restored keeps sub-revisions and one record per revision', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') });
  const held = s.storage.history.heldRecords();
  // ignore_value on a key an earlier op of the same txn deleted: etcd's apply fails; the simulator rolls back.
  assert.throws(() => s.txn({ success: [{ requestDeleteRange: { key: b('a') } }, { requestPut: { key: b('a'), ignoreValue: true } }] }));
  assert.equal(s.storage.history.heldRecords(), held);
  assert.equal(s.checkValid(), undefined);
  s.txn({ success: [{ requestPut: { key: b('x'), value: b('1') } }, { requestPut: { key: b('y'), value: b('2') } }] });
  const copy = new MvccStore();
  copy.restore(s.snapshot());
  assert.equal(copy.hashKV().hash, s.hashKV().hash, 'HashKV covers sub-revisions');
  assert.equal(copy.storage.history.heldRecords(), s.storage.history.heldRecords());
  assert.equal(copy.checkValid(), undefined);
});

test('a large value whose owner handed its buffer over is kept as it is; any other value is copied', async () => {
  const { handOver } = await import('../../src/mvcc/index.js');
  const s = new MvccStore();
  // Handed over and at least half of its buffer: kept, no copy (what the gRPC door does with a request message).
  const message = new Uint8Array(70_000).fill(1);
  handOver(message);
  const kept = message.subarray(10);
  s.put({ key: b('kept'), value: kept });
  const got = s.range({ key: b('kept') }).kvs[0]!;
  assert.equal(got.value.buffer, message.buffer, 'a view of the handed-over buffer');
  assert.deepEqual([got.value.byteOffset, got.value.byteLength], [10, 69_990]);
  // A small part of a handed-over buffer is copied: a record keeps alive at most twice its value.
  s.put({ key: b('small part'), value: message.subarray(0, 20_000) });
  assert.notEqual(s.range({ key: b('small part') }).kvs[0]!.value.buffer, message.buffer);
  // Bytes not handed over are the caller's: copied, so changing them later changes nothing stored.
  const own = new Uint8Array(70_000).fill(2);
  s.put({ key: b('own'), value: own });
  own.fill(3);
  assert.deepEqual(s.range({ key: b('own') }).kvs[0]!.value, new Uint8Array(70_000).fill(2));
  // Compaction frees a kept record as any other.
  s.put({ key: b('kept'), value: b('small') });
  s.compact(s.currentRevision);
  assert.equal(text(s.range({ key: b('kept') }).kvs[0]!.value), 'small');
  assert.equal(s.checkValid(), undefined);
});
