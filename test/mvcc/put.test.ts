import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrEmptyKey, ErrKeyNotFound, ErrLeaseNotFound, ErrLeaseProvided, ErrRequestTooLarge, ErrValueProvided, GrpcCode, MvccStore, prefixEnd, text } from '../../src/index.js';
import { assertUnchanged, b, FakeLessor, get, kv } from './helpers.js';

test('put creates and updates a key, returning the new revision', () => {
  const s = new MvccStore();
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('1') }), { revision: 2 });
  assert.deepStrictEqual(get(s, 'k'), kv('k', '1', 2, 2, 1));
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('2') }), { revision: 3 });
  assert.deepStrictEqual(get(s, 'k'), kv('k', '2', 2, 3, 2));
  // No value: the empty value.
  s.put({ key: b('k') });
  assert.deepStrictEqual(get(s, 'k'), kv('k', '', 2, 4, 3));
});

test('the store keeps its own copies of key and value bytes', () => {
  const s = new MvccStore();
  const key = b('key');
  const value = b('val');
  s.put({ key, value });
  key[0] = 0x7a;
  value[0] = 0x7a;
  assert.deepStrictEqual(get(s, 'key'), kv('key', 'val', 2, 2, 1));
  assert.equal(get(s, 'zey'), undefined);
});

test('prev_kv returns the previous KeyValue, and nothing for a new or deleted key', () => {
  const s = new MvccStore();
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('1'), prevKv: true }), { revision: 2 });
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('2'), prevKv: true }), { revision: 3, prevKv: kv('k', '1', 2, 2, 1) });
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('3') }), { revision: 4 });
  s.deleteRange({ key: b('k') });
  assert.deepStrictEqual(s.put({ key: b('k'), value: b('4'), prevKv: true }), { revision: 6 });
});

test('ignore_value keeps the value and still takes a revision and a version', () => {
  const s = new MvccStore();
  s.put({ key: b('k'), value: b('keep') });
  assert.deepStrictEqual(s.put({ key: b('k'), ignoreValue: true, prevKv: true }), { revision: 3, prevKv: kv('k', 'keep', 2, 2, 1) });
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'keep', 2, 3, 2));
  // An explicitly empty value is not "provided".
  s.put({ key: b('k'), ignoreValue: true, value: new Uint8Array(0) });
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'keep', 2, 4, 3));
});

test('ignore_value / ignore_lease on a missing or deleted key: ErrKeyNotFound, nothing changes', () => {
  const s = new MvccStore();
  assertUnchanged(s, ErrKeyNotFound, () => s.put({ key: b('k'), ignoreValue: true }));
  assertUnchanged(s, ErrKeyNotFound, () => s.put({ key: b('k'), ignoreLease: true, value: b('v') }));
  s.put({ key: b('k'), value: b('v') });
  s.deleteRange({ key: b('k') });
  assertUnchanged(s, ErrKeyNotFound, () => s.put({ key: b('k'), ignoreValue: true }));
  assertUnchanged(s, ErrKeyNotFound, () => s.put({ key: b('k'), ignoreLease: true }));
});

test('ignore_value with a value: ErrValueProvided; ignore_lease with a lease: ErrLeaseProvided', () => {
  const lessor = new FakeLessor([5n]);
  const s = new MvccStore({ lessor });
  s.put({ key: b('k'), value: b('v'), lease: 5n });
  assertUnchanged(s, ErrValueProvided, () => s.put({ key: b('k'), ignoreValue: true, value: b('x') }), lessor);
  assertUnchanged(s, ErrLeaseProvided, () => s.put({ key: b('k'), ignoreLease: true, lease: 5n }), lessor);
  // Checked before the key lookup: a missing key still reports the provided field.
  assertUnchanged(s, ErrValueProvided, () => s.put({ key: b('missing'), ignoreValue: true, value: b('x') }), lessor);
  assertUnchanged(s, ErrLeaseProvided, () => s.put({ key: b('missing'), ignoreLease: true, lease: 7n }), lessor);
});

test('a store without a lessor knows no lease: ErrLeaseNotFound (NOT_FOUND)', () => {
  const s = new MvccStore();
  s.put({ key: b('k') });
  const err = assertUnchanged(s, ErrLeaseNotFound, () => s.put({ key: b('k'), value: b('v'), lease: 1n }));
  assert.equal(err.code, GrpcCode.NOT_FOUND);
  assert.equal(err.code, 5);
  assert.equal(err.message, 'etcdserver: requested lease not found');
  assertUnchanged(s, ErrLeaseNotFound, () => s.put({ key: b('new'), lease: 0x7fffffffffffffffn }));
  assertUnchanged(s, ErrLeaseNotFound, () => s.put({ key: b('new'), lease: -1n }));
  // Lease 0 is "no lease".
  assert.equal(s.put({ key: b('k'), lease: 0n }).revision, 3);
});

test('an unknown lease is rejected even when a lessor is present', () => {
  const lessor = new FakeLessor([5n]);
  const s = new MvccStore({ lessor });
  assertUnchanged(s, ErrLeaseNotFound, () => s.put({ key: b('k'), lease: 6n }), lessor);
});

test('a plain put checks the lease before ignore_*: unknown lease wins over a missing key', () => {
  const s = new MvccStore({ lessor: new FakeLessor([]) });
  // ignore_value with a lease on a missing key: etcd's Put looks up the lease first.
  assertUnchanged(s, ErrLeaseNotFound, () => s.put({ key: b('k'), ignoreValue: true, lease: 9n }));
});

test('lease bookkeeping: attach, keep, switch, detach on plain put and on delete', () => {
  const lessor = new FakeLessor([1n, 2n]);
  const s = new MvccStore({ lessor });
  s.put({ key: b('k'), value: b('a'), lease: 1n });
  assert.deepStrictEqual(lessor.log, ['attach 1 k']);
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'a', 2, 2, 1, 1n));
  // Same lease again: no bookkeeping.
  s.put({ key: b('k'), value: b('b'), lease: 1n });
  assert.deepStrictEqual(lessor.log, ['attach 1 k']);
  // ignore_lease keeps the lease and touches nothing.
  s.put({ key: b('k'), value: b('c'), ignoreLease: true });
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'c', 2, 4, 3, 1n));
  assert.deepStrictEqual(lessor.log, ['attach 1 k']);
  // ignore_value with a new lease moves the key.
  s.put({ key: b('k'), ignoreValue: true, lease: 2n });
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'c', 2, 5, 4, 2n));
  assert.deepStrictEqual(lessor.log.slice(1), ['detach 1 k', 'attach 2 k']);
  // A plain put without lease detaches.
  s.put({ key: b('k'), value: b('d') });
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'd', 2, 6, 5));
  assert.deepStrictEqual(lessor.log.slice(3), ['detach 2 k']);
  assert.deepStrictEqual(lessor.keys(1n), []);
  assert.deepStrictEqual(lessor.keys(2n), []);
  // Put with a lease, then delete: detach.
  s.put({ key: b('k'), lease: 2n });
  s.put({ key: b('j'), lease: 2n });
  s.put({ key: b('i') });
  assert.deepStrictEqual(lessor.keys(2n), ['j', 'k']);
  s.deleteRange({ key: b('i'), rangeEnd: b('l') });
  assert.deepStrictEqual(lessor.log.slice(4), ['attach 2 k', 'attach 2 j', 'detach 2 j', 'detach 2 k']);
  assert.deepStrictEqual(lessor.keys(2n), []);
  // Re-creating a key after delete with a lease attaches again (the tombstone carried no lease).
  s.put({ key: b('k'), lease: 1n });
  assert.deepStrictEqual(lessor.log.slice(8), ['attach 1 k']);
});

test('a txn does the same lease bookkeeping', () => {
  const lessor = new FakeLessor([1n, 2n]);
  const s = new MvccStore({ lessor });
  s.txn({ success: [{ requestPut: { key: b('a'), lease: 1n } }, { requestPut: { key: b('b'), lease: 2n } }] });
  s.txn({ success: [{ requestPut: { key: b('a') } }, { requestDeleteRange: { key: b('b') } }, { requestPut: { key: b('c'), lease: 1n } }] });
  assert.deepStrictEqual(lessor.log, ['attach 1 a', 'attach 2 b', 'detach 1 a', 'detach 2 b', 'attach 1 c']);
});

test('empty key: ErrEmptyKey', () => {
  const s = new MvccStore();
  assertUnchanged(s, ErrEmptyKey, () => s.put({ key: new Uint8Array(0), value: b('v') }));
});

test('the store keeps its own copy of keys and values: a caller reusing its buffers changes nothing stored', () => {
  const s = new MvccStore();
  const key = b('reused-key');
  const small = b('v1');
  const large = new Uint8Array(5000).fill(1); // above the slab threshold: copied on its own
  s.put({ key, value: small });
  s.put({ key: b('big'), value: large });
  key.fill(0x7a);
  small.fill(0x7a);
  large.fill(9);
  assert.equal(text(s.range({ key: b('reused-key') }).kvs[0]!.value), 'v1');
  assert.equal(s.range({ key: b('big') }).kvs[0]!.value[4999], 1);
  assert.equal(s.range({ key: b('zzzzzzzzzz') }).count, 0);
  for (let i = 0; i < 2000; i++) s.put({ key: b(`k${i}`), value: b(`value-${i}`) }); // spans several slabs
  for (let i = 0; i < 2000; i += 137) assert.equal(text(s.range({ key: b(`k${i}`) }).kvs[0]!.value), `value-${i}`);
});

test('keys and values given as Node Buffers are copied too (Buffer#slice would only make a view)', () => {
  const s = new MvccStore();
  const big = Buffer.alloc(5000, 1);
  const key = Buffer.from('buffer-key');
  s.put({ key, value: big });
  big.fill(2);
  key.fill(0x7a);
  assert.equal(s.range({ key: b('buffer-key') }).kvs[0]!.value[0], 1);
  const k = Buffer.from('a/');
  const end = prefixEnd(k);
  assert.equal(k.toString(), 'a/');
  assert.equal(Buffer.from(end).toString(), 'a0');
});

test('put() refuses a proposal over --max-request-bytes from one value size on, and a refusal changes nothing', () => {
  const max = 200;
  const s = new MvccStore({ maxRequestBytes: max });
  // Every value size from fitting to refused: all fit below the first refused size, none from it on.
  let firstRefused: number | undefined;
  for (let n = 100; n < 220; n++) {
    const key = b(`k${n % 3}`);
    const value = new Uint8Array(n).fill(n & 0xff);
    const before = s.hash();
    const rev = s.currentRevision;
    try {
      assert.equal(s.put({ key, value }).revision, rev + 1, `a value of ${n} bytes`);
      assert.equal(firstRefused, undefined, `a value of ${n} bytes fits after ${firstRefused} did not`);
    } catch (err) {
      assert.equal((err as { kind?: unknown }).kind, ErrRequestTooLarge);
      assert.equal(s.hash(), before);
      assert.equal(s.currentRevision, rev);
      firstRefused ??= n;
    }
  }
  // The proposal's wrapping (the Raft request's header and field tags) takes the rest of the 200 bytes.
  assert.ok(firstRefused !== undefined && firstRefused > 150 && firstRefused < 200, String(firstRefused));
  assert.equal(s.checkValid(), undefined);
});
