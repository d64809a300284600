import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdError, ErrCompacted, grpcError, isGrpcError, statusName } from '../../src/index.js';
import { toGrpcError } from '../../src/server/errors.js';
import { B, newSim, assertGrpcError } from './helpers.js';

test('every etcd error a KV or Lease call can raise surfaces as grpc-js would show it', () => {
  const { services: s } = newSim({ maxTxnOps: 2, maxRequestBytes: 1024 });
  const k = s.kv;
  k.put({ key: B('k'), value: B('v') });
  const cases: [() => unknown, number, string, string][] = [
    [() => k.range({ key: B('') }), 3, 'etcdserver: key is not provided', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), sort_order: 'BOGUS' as 'NONE' }), 3, 'etcdserver: invalid sort option', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), sort_order: 7 }), 3, 'etcdserver: invalid sort option', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), sort_target: 7 }), 3, 'etcdserver: invalid sort option', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), sort_order: 'Descend' as 'DESCEND' }), 3, 'etcdserver: invalid sort option', 'INVALID_ARGUMENT'],
    [() => k.put({ key: B('k'), ignore_value: true, value: B('x') }), 3, 'etcdserver: value is provided', 'INVALID_ARGUMENT'],
    [() => k.put({ key: B('k'), ignore_lease: true, lease: '123' }), 3, 'etcdserver: lease is provided', 'INVALID_ARGUMENT'],
    [() => k.put({ key: B('missing'), ignore_value: true }), 3, 'etcdserver: key not found', 'INVALID_ARGUMENT'],
    [() => k.put({ key: B('k'), value: B('x'), lease: '-1' }), 5, 'etcdserver: requested lease not found', 'NOT_FOUND'],
    [() => k.put({ key: B('k'), value: new Uint8Array(2048) }), 3, 'etcdserver: request is too large', 'INVALID_ARGUMENT'],
    [() => k.txn({ success: [{ request_put: { key: B('a') } }, { request_put: { key: B('b') } }, { request_put: { key: B('c') } }] }), 3, 'etcdserver: too many operations in txn request', 'INVALID_ARGUMENT'],
    [() => k.txn({ success: [{ request_put: { key: B('a') } }, { request_put: { key: B('a') } }] }), 3, 'etcdserver: duplicate key given in txn request', 'INVALID_ARGUMENT'],
    [() => k.txn({ compare: [{ key: B(''), target: 'VERSION' }] }), 3, 'etcdserver: key is not provided', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), revision: '3' }), 11, 'etcdserver: mvcc: required revision is a future revision', 'OUT_OF_RANGE'],
    [() => s.lease.leaseRevoke({ ID: '12345' }), 5, 'etcdserver: requested lease not found', 'NOT_FOUND'],
    [() => s.lease.leaseRevoke({}), 5, 'etcdserver: requested lease not found', 'NOT_FOUND'],
    [() => s.lease.leaseGrant({ TTL: '9000000001' }), 11, 'etcdserver: too large lease TTL', 'OUT_OF_RANGE'],
    [() => s.lease.leaseGrant({ TTL: '9223372036854775807' }), 11, 'etcdserver: too large lease TTL', 'OUT_OF_RANGE'],
    [() => k.range({ key: B('k'), revision: 'abc' }), 3, 'invalid int64 value "abc" for field revision', 'INVALID_ARGUMENT'],
    [() => k.range({ key: B('k'), limit: 1.5 }), 3, 'invalid int64 value 1.5 for field limit', 'INVALID_ARGUMENT'],
  ];
  for (const [fn, code, details, name] of cases) assertGrpcError(fn, code, details, name);
  s.lease.leaseGrant({ ID: '7', TTL: '60' });
  assertGrpcError(() => s.lease.leaseGrant({ ID: '7', TTL: '60' }), 9, 'etcdserver: lease already exists', 'FAILED_PRECONDITION');
  k.compact({ revision: '2' });
  assertGrpcError(() => k.range({ key: B('k'), revision: '1' }), 11, 'etcdserver: mvcc: required revision has been compacted', 'OUT_OF_RANGE');
  assertGrpcError(() => k.compact({ revision: '2' }), 11, 'etcdserver: mvcc: required revision has been compacted', 'OUT_OF_RANGE');
});

test('a rejected request changes nothing', () => {
  const sim = newSim();
  sim.services.kv.put({ key: B('k'), value: B('v') });
  const before = sim.digest();
  assert.throws(() => sim.services.kv.txn({ success: [{ request_put: { key: B('q') } }, { request_put: { key: B('z'), lease: '55' } }] }));
  assert.equal(sim.digest(), before);
  assert.equal(sim.mvcc.currentRevision, 2);
});

test('toGrpcError: EtcdError keeps code and message; unknown errors are UNKNOWN; grpc errors pass through', () => {
  const e = toGrpcError(new EtcdError(ErrCompacted));
  assert.equal(e.constructor, Error);
  assert.equal(e.message, '11 OUT_OF_RANGE: etcdserver: mvcc: required revision has been compacted');
  assert.ok(e.cause instanceof EtcdError);
  const u = toGrpcError(new TypeError('boom'));
  assert.deepEqual([u.code, u.details, u.message, u.constructor], [2, 'boom', '2 UNKNOWN: boom', Error]);
  const s = toGrpcError('plain');
  assert.deepEqual([s.code, s.message], [2, '2 UNKNOWN: plain']);
  const g = grpcError(14, 'down');
  assert.equal(toGrpcError(g), g);
  assert.equal(isGrpcError(g), true);
  assert.equal(isGrpcError(new EtcdError(ErrCompacted)), false);
  assert.deepEqual([statusName(1), statusName(8), statusName(16), statusName(99)], ['CANCELLED', 'RESOURCE_EXHAUSTED', 'UNAUTHENTICATED', 'UNKNOWN']);
});
