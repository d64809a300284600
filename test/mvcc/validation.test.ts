import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_MAX_REQUEST_BYTES,
  DEFAULT_MAX_TXN_OPS,
  ErrCompacted,
  ErrDuplicateKey,
  ErrEmptyKey,
  ErrFutureRev,
  ErrInvalidSortOption,
  ErrKeyNotFound,
  ErrLeaseNotFound,
  ErrLeaseProvided,
  ErrRequestTooLarge,
  ErrTooManyOps,
  ErrValueProvided,
  EtcdError,
  isEtcdError,
  MvccStore,
  type EtcdErrorKind,
  type SortOrder,
  type SortTarget,
} from '../../src/index.js';
import { assertUnchanged, b, NUL } from './helpers.js';

test("every KV error carries etcd's gRPC code and exact message", () => {
  const table: [EtcdErrorKind, number, string][] = [
    [ErrCompacted, 11, 'etcdserver: mvcc: required revision has been compacted'],
    [ErrFutureRev, 11, 'etcdserver: mvcc: required revision is a future revision'],
    [ErrEmptyKey, 3, 'etcdserver: key is not provided'],
    [ErrKeyNotFound, 3, 'etcdserver: key not found'],
    [ErrValueProvided, 3, 'etcdserver: value is provided'],
    [ErrLeaseProvided, 3, 'etcdserver: lease is provided'],
    [ErrTooManyOps, 3, 'etcdserver: too many operations in txn request'],
    [ErrDuplicateKey, 3, 'etcdserver: duplicate key given in txn request'],
    [ErrInvalidSortOption, 3, 'etcdserver: invalid sort option'],
    [ErrRequestTooLarge, 3, 'etcdserver: request is too large'],
    [ErrLeaseNotFound, 5, 'etcdserver: requested lease not found'],
  ];
  for (const [kind, code, message] of table) {
    assert.equal(kind.code, code, message);
    assert.equal(kind.message, message);
    const err = new EtcdError(kind);
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'EtcdError');
    assert.equal(err.code, code);
    assert.equal(err.message, message);
    assert.ok(isEtcdError(err, kind));
    assert.ok(isEtcdError(err));
  }
  assert.ok(!isEtcdError(new EtcdError(ErrCompacted), ErrFutureRev));
  assert.ok(!isEtcdError(new Error('etcdserver: key not found')));
});

test("etcd's defaults: 128 txn ops, 1.5 MiB requests", () => {
  assert.equal(DEFAULT_MAX_TXN_OPS, 128);
  assert.equal(DEFAULT_MAX_REQUEST_BYTES, 1.5 * 1024 * 1024);
  const s = new MvccStore();
  assert.equal(s.maxTxnOps, 128);
  assert.equal(s.maxRequestBytes, 1572864);
});

test('empty keys: ErrEmptyKey for range, put, delete and compare; nothing changes', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  const empty = new Uint8Array(0);
  assertUnchanged(s, ErrEmptyKey, () => s.range({ key: empty }));
  assertUnchanged(s, ErrEmptyKey, () => s.range({ key: empty, rangeEnd: NUL }));
  assertUnchanged(s, ErrEmptyKey, () => s.put({ key: empty, value: b('v') }));
  assertUnchanged(s, ErrEmptyKey, () => s.deleteRange({ key: empty, rangeEnd: b('z') }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ compare: [{ key: empty, target: 'VALUE', result: 'EQUAL' }] }));
});

test('an unknown sort order or target: ErrInvalidSortOption', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  assertUnchanged(s, ErrInvalidSortOption, () => s.range({ key: b('a'), sortOrder: 'SIDEWAYS' as SortOrder }));
  assertUnchanged(s, ErrInvalidSortOption, () => s.range({ key: b('a'), sortTarget: 'LEASE' as SortTarget }));
  assertUnchanged(s, ErrInvalidSortOption, () => s.range({ key: b('a'), sortTarget: 'key' as SortTarget }));
  assertUnchanged(s, ErrInvalidSortOption, () => s.txn({ failure: [{ requestRange: { key: b('a'), sortTarget: 'X' as SortTarget } }] }));
});

test('request too large: a 1.6 MiB put is rejected, a 1 MiB put is fine', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  const big = new Uint8Array(Math.round(1.6 * 1024 * 1024));
  assertUnchanged(s, ErrRequestTooLarge, () => s.put({ key: b('k'), value: big }));
  assertUnchanged(s, ErrRequestTooLarge, () => s.txn({ success: [{ requestPut: { key: b('k'), value: big } }] }));
  // A txn that writes is proposed, compares and all (a compare-only txn is read-only: see read_only_txn_size.test.ts).
  assertUnchanged(s, ErrRequestTooLarge, () =>
    s.txn({ compare: [{ key: b('a'), target: 'VALUE', result: 'EQUAL', value: big }], failure: [{ requestPut: { key: b('x') } }] }),
  );
  assertUnchanged(s, ErrRequestTooLarge, () => s.deleteRange({ key: big }));
  // Exactly 1.5 MiB of value plus the envelope is over the limit too.
  assertUnchanged(s, ErrRequestTooLarge, () => s.put({ key: b('k'), value: new Uint8Array(DEFAULT_MAX_REQUEST_BYTES) }));
  assert.equal(s.put({ key: b('k'), value: new Uint8Array(1024 * 1024) }).revision, 3);
  assert.equal(s.put({ key: b('k2'), value: new Uint8Array(DEFAULT_MAX_REQUEST_BYTES - 1024) }).revision, 4);
  // Two 1 MiB puts in one txn exceed it together.
  const mib = new Uint8Array(1024 * 1024);
  assertUnchanged(s, ErrRequestTooLarge, () => s.txn({ success: [{ requestPut: { key: b('x'), value: mib } }, { requestPut: { key: b('y'), value: mib } }] }));
  // Reads are not size-checked.
  assert.equal(s.range({ key: b('k') }).kvs[0]!.value.length, 1024 * 1024);
});

test('a custom maxRequestBytes', () => {
  const s = new MvccStore({ maxRequestBytes: 200 });
  assert.equal(s.put({ key: b('k'), value: new Uint8Array(100) }).revision, 2);
  assertUnchanged(s, ErrRequestTooLarge, () => s.put({ key: b('k'), value: new Uint8Array(200) }));
  assertUnchanged(s, ErrRequestTooLarge, () => s.txn({ success: [{ requestPut: { key: b('k'), value: new Uint8Array(300) } }] }));
  const roomy = new MvccStore({ maxRequestBytes: 4 * 1024 * 1024 });
  assert.equal(roomy.put({ key: b('k'), value: new Uint8Array(3 * 1024 * 1024) }).revision, 2);
});

test('validation runs before anything: a bad second op rejects puts before it', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ success: [{ requestPut: { key: b('x') } }, { requestPut: { key: new Uint8Array(0) } }] }));
  assertUnchanged(s, ErrLeaseProvided, () => s.txn({ success: [{ requestPut: { key: b('x') } }, { requestPut: { key: b('a'), ignoreLease: true, lease: 3n } }] }));
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ success: [{ requestPut: { key: b('x') } }], failure: Array.from({ length: 129 }, () => ({ requestRange: { key: b('a') } })) }));
});

test("etcd 3.4 lets an unknown sort_order through (key order, truncated); 3.5+ refuse it — observed on 3.4.23", () => {
  const old = new MvccStore({ etcdVersion: '3.4' });
  const now = new MvccStore();
  for (const s of [old, now]) for (const k of ['b', 'a', 'c', 'd']) s.put({ key: b(k), value: b(`v${k}`) });
  const keys = (r: { kvs: { key: Uint8Array }[] }): string[] => r.kvs.map((kv) => Buffer.from(kv.key).toString());
  const r1 = old.range({ key: b('a'), rangeEnd: b('z'), sortOrder: '3' as SortOrder, limit: 2 });
  assert.deepEqual([keys(r1), r1.more, r1.count], [['a', 'b'], true, 4]);
  const r2 = old.range({ key: b('a'), rangeEnd: b('z'), sortOrder: '7' as SortOrder, sortTarget: 'VALUE', limit: 3 });
  assert.deepEqual([keys(r2), r2.more], [['a', 'b', 'c'], true]);
  const inTxn = old.txn({ success: [{ requestRange: { key: b('a'), rangeEnd: b('z'), sortOrder: '5' as SortOrder } }] });
  assert.equal(inTxn.succeeded, true);
  assert.throws(() => now.range({ key: b('a'), rangeEnd: b('z'), sortOrder: '3' as SortOrder }), (e: unknown) => isEtcdError(e, ErrInvalidSortOption));
  assert.throws(() => now.txn({ success: [{ requestRange: { key: b('a'), sortOrder: '3' as SortOrder } }] }), (e: unknown) => isEtcdError(e, ErrInvalidSortOption));
});
