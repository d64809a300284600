// A caller that ignores the TypeScript types gets INVALID_ARGUMENT naming the field, and nothing changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, EtcdError, GrpcCode, MvccStore, utf8, type GrpcError } from '../../src/index.js';

const b = utf8;

/** Calls `f` with a junk-typed request: it must throw INVALID_ARGUMENT naming `field`, and change nothing. */
function refused(store: MvccStore, field: string, f: () => unknown): void {
  const before = { rev: store.currentRevision, hash: store.hash() };
  assert.throws(f, (err: unknown) => {
    assert.ok(err instanceof EtcdError, String(err));
    assert.equal(err.code, GrpcCode.INVALID_ARGUMENT);
    assert.ok(err.message.includes(field), `${err.message} names ${field}`);
    return true;
  });
  assert.deepEqual({ rev: store.currentRevision, hash: store.hash() }, before);
}

test('MvccStore: every field of the wrong type is refused, by name, before anything is written', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') });
  const junk = (v: unknown): never => v as never;
  refused(s, 'PutRequest.value', () => s.put({ key: b('a'), value: junk('down') }));
  refused(s, 'PutRequest.value', () => s.put({ key: b('a'), value: junk(123) }));
  refused(s, 'PutRequest.key', () => s.put({ key: junk('a'), value: b('1') }));
  refused(s, 'PutRequest.lease', () => s.put({ key: b('a'), lease: junk(5) }));
  refused(s, 'PutRequest.prevKv', () => s.put({ key: b('a'), prevKv: junk('yes') }));
  refused(s, 'PutRequest', () => s.put(junk(null)));
  refused(s, 'RangeRequest.rangeEnd', () => s.range({ key: b('a'), rangeEnd: junk([0]) }));
  refused(s, 'RangeRequest.limit', () => s.range({ key: b('a'), limit: junk('10') }));
  refused(s, 'DeleteRangeRequest.key', () => s.deleteRange({ key: junk(undefined) }));
  refused(s, 'TxnRequest.success', () => s.txn({ success: junk({}) }));
  refused(s, 'TxnRequest.compare[0].value', () => s.txn({ compare: [{ key: b('a'), target: 'VALUE', result: 'EQUAL', value: junk('1') }] }));
  // A junk op late in a txn: the ops before it must not have been applied (no half-done txn, no rollback crash).
  refused(s, 'TxnRequest.success[2].requestPut.value', () =>
    s.txn({
      success: [
        { requestPut: { key: b('x'), value: b('1') } },
        { requestDeleteRange: { key: b('a') } },
        { requestPut: { key: b('y'), value: junk({ length: 3 }) } },
      ],
    }),
  );
  refused(s, 'TxnRequest.failure[0].requestTxn.success[0].requestRange.key', () =>
    s.txn({ compare: [{ key: b('nope'), target: 'VERSION', result: 'GREATER', version: 5 }], failure: [{ requestTxn: { success: [{ requestRange: { key: junk(1) } }] } }] }),
  );
  refused(s, 'compact revision', () => s.compact(junk('1')));
  assert.equal(s.checkValid(), undefined);
});

test('a junk value can no longer reach another key, nor another simulator: every store copies into its own slabs', () => {
  const one = createEtcdSim({ time: 'virtual' });
  const two = createEtcdSim({ time: 'virtual' });
  two.mvcc.put({ key: b('other'), value: b('precious') });
  const twoHash = two.digest();
  // What used to reset the shared slab's bookkeeping (a value with no byteLength) is refused…
  assert.throws(() => one.mvcc.put({ key: b('k'), value: 'down' as never }), EtcdError);
  // …and valid puts in one store never write into another's bytes.
  for (let i = 0; i < 2000; i++) one.mvcc.put({ key: b(`k${i}`), value: b('v'.repeat(i % 300)) });
  assert.equal(two.digest(), twoHash);
  assert.equal(Buffer.from(two.mvcc.range({ key: b('other') }).kvs[0]!.value).toString(), 'precious');
  one.close();
  two.close();
});

test('services and the raw client: junk-typed fields are INVALID_ARGUMENT naming the field, never UNKNOWN', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  const before = sim.digest();
  const invalid = async (p: Promise<unknown>, field: string): Promise<void> => {
    await assert.rejects(p, (err: unknown) => {
      const e = err as GrpcError;
      assert.equal(e.code, GrpcCode.INVALID_ARGUMENT, e.message);
      assert.ok(e.details.includes(field), `${e.details} names ${field}`);
      return true;
    });
  };
  await invalid(c.kv.put({ key: 'junk', value: 123 as never }), 'value');
  await invalid(c.kv.put({ key: {} as never, value: 'x' }), 'key');
  await invalid(c.kv.range({ key: 'a', range_end: 7 as never }), 'range_end');
  await invalid(c.kv.txn({ success: 'nope' as never }), 'success');
  await invalid(c.kv.put({ key: 'a', value: 'x', prev_kv: 'yes' as never }), 'prevKv');
  assert.throws(() => sim.services.kv.put({ key: Buffer.from('a'), value: 5 as never }), (err: unknown) => (err as GrpcError).code === GrpcCode.INVALID_ARGUMENT);
  // A missing message is an empty one, as protobuf decodes it: etcd's own error.
  assert.throws(() => sim.services.kv.put(undefined as never), /etcdserver: key is not provided/);
  assert.equal(sim.digest(), before);
  sim.close();
});
