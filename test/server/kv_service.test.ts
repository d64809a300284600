import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { B, hdr, inner, kv, newSim, assertGrpcError } from './helpers.js';

const FUTURE = 'etcdserver: mvcc: required revision is a future revision';
const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';

test('put, re-put, delete, re-put: whole responses as etcd 3.4.23 answered them', () => {
  const { services: { kv: k } } = newSim();
  assert.deepStrictEqual(k.range({ key: B('k') }), { header: hdr(1), kvs: [], more: false, count: '0' });
  assert.deepStrictEqual(k.put({ key: B('k'), value: B('v') }), { header: hdr(2), prev_kv: null });
  assert.deepStrictEqual(k.put({ key: B('k'), value: B('v') }), { header: hdr(3), prev_kv: null });
  assert.deepStrictEqual(k.range({ key: B('k') }), { header: hdr(3), kvs: [kv('k', 2, 3, 2, 'v')], more: false, count: '1' });
  assert.deepStrictEqual(k.deleteRange({ key: B('k'), prev_kv: true }), { header: hdr(4), deleted: '1', prev_kvs: [kv('k', 2, 3, 2, 'v')] });
  assert.deepStrictEqual(k.deleteRange({ key: B('missing') }), { header: hdr(4), deleted: '0', prev_kvs: [] });
  assert.deepStrictEqual(k.put({ key: B('k'), value: B('v'), prev_kv: true }), { header: hdr(5), prev_kv: null });
  assert.deepStrictEqual(k.put({ key: B('k'), value: B('w'), prev_kv: true }), { header: hdr(6), prev_kv: kv('k', 5, 5, 1, 'v') });
  const r = k.range({ key: B('k') });
  assert.ok(Buffer.isBuffer(r.kvs[0]!.key) && Buffer.isBuffer(r.kvs[0]!.value));
});

test('range options in message form: limit/more/count, keys_only, count_only, sort by enum name and number', () => {
  const { services: { kv: k } } = newSim();
  for (const [key, v] of [['a', '2'], ['b', '3'], ['c', '1'], ['d', '1']] as const) k.put({ key: B(key), value: B(v) });
  const all = { key: B('a'), range_end: B('z') };
  assert.deepStrictEqual(k.range({ ...all, limit: '2' }), { header: hdr(5), kvs: [kv('a', 2, 2, 1, '2'), kv('b', 3, 3, 1, '3')], more: true, count: '4' });
  assert.deepStrictEqual(k.range({ ...all, limit: '1', keys_only: true }), { header: hdr(5), kvs: [kv('a', 2, 2, 1, '')], more: true, count: '4' });
  assert.deepStrictEqual(k.range({ ...all, count_only: true }), { header: hdr(5), kvs: [], more: false, count: '4' });
  const keys = (r: { kvs: { key: Buffer }[] }): string[] => r.kvs.map((x) => x.key.toString());
  assert.deepEqual(keys(k.range({ ...all, sort_order: 'DESCEND', sort_target: 'MOD' })), ['d', 'c', 'b', 'a']);
  // DESCEND by VALUE (c and d tie on "1": their order is the sort's, not asserted).
  assert.deepEqual(keys(k.range({ ...all, sort_order: 2, sort_target: 4 })).slice(0, 2), ['b', 'a']);
  assert.deepEqual(keys(k.range({ ...all, sort_order: 'NONE', sort_target: 'VALUE' })), ['c', 'd', 'a', 'b']);
  assert.deepEqual(keys(k.range({ ...all, limit: '-1' })), ['a', 'b', 'c', 'd']);
  assert.deepEqual(keys(k.range({ ...all, min_mod_revision: '4', max_mod_revision: 4 })), ['c']);
  assert.deepEqual(keys(k.range({ ...all, limit: 99999999999999999999n })), ['a', 'b', 'c', 'd']);
});

test('int64 extremes: revisions far beyond 2^53 keep their meaning', () => {
  const { services: { kv: k } } = newSim();
  k.put({ key: B('a'), value: B('1') });
  k.put({ key: B('a'), value: B('2') });
  assertGrpcError(() => k.range({ key: B('a'), revision: '9223372036854775807' }), 11, FUTURE, 'OUT_OF_RANGE');
  assertGrpcError(() => k.range({ key: B('a'), revision: '9007199254740993' }), 11, FUTURE, 'OUT_OF_RANGE');
  assertGrpcError(() => k.range({ key: B('a'), revision: 2n ** 60n }), 11, FUTURE, 'OUT_OF_RANGE');
  // A plain Range treats every revision <= 0 as "current".
  assert.equal(k.range({ key: B('a'), revision: '-9223372036854775808' }).kvs[0]!.value.toString(), '2');
  // Inside a txn a negative revision is below the (initial -1) compaction point unless it is -1.
  assertGrpcError(() => k.txn({ success: [{ request_range: { key: B('a'), revision: '-9223372036854775808' } }] }), 11, COMPACTED, 'OUT_OF_RANGE');
  assertGrpcError(() => k.compact({ revision: '9223372036854775807' }), 11, FUTURE, 'OUT_OF_RANGE');
  assertGrpcError(() => k.compact({ revision: '-9223372036854775808' }), 11, COMPACTED, 'OUT_OF_RANGE');
  assert.deepStrictEqual(k.compact({ revision: '2', physical: true }), { header: hdr(3) });
  assertGrpcError(() => k.range({ key: B('a'), revision: '1' }), 11, COMPACTED, 'OUT_OF_RANGE');
  assert.deepStrictEqual(k.range({ key: B('a'), revision: '2' }).kvs, [kv('a', 2, 2, 1, '1')]);
});

test('lease IDs stay exact int64 through put and range (max, min, negative)', () => {
  const { services: s } = newSim();
  for (const id of ['9223372036854775807', '-9223372036854775808', '-3']) {
    assert.equal(s.lease.leaseGrant({ ID: id, TTL: '60' }).ID, id);
    s.kv.put({ key: B(`k${id}`), value: B('v'), lease: id });
    assert.equal(s.kv.range({ key: B(`k${id}`) }).kvs[0]!.lease, id);
  }
  assertGrpcError(() => s.kv.put({ key: B('x'), lease: '9223372036854775806' }), 5, 'etcdserver: requested lease not found', 'NOT_FOUND');
  assertGrpcError(() => s.kv.put({ key: B('x'), lease: '9223372036854775808' }), 3, 'int64 value 9223372036854775808 out of range for field lease', 'INVALID_ARGUMENT');
});

test('txn: outer header full, inner headers revision only, nested txn header empty (observed 3.4.23 §10)', () => {
  const { services: { kv: k } } = newSim();
  k.put({ key: B('k'), value: B('v1') });
  k.put({ key: B('m'), value: B('v1') });
  const resp = k.txn({
    success: [
      { request: 'request_range', request_range: { key: B('k') } },
      { request: 'request_put', request_put: { key: B('k'), value: B('v2'), prev_kv: true } },
      { request_range: { key: B('k') } },
      { request_delete_range: { key: B('m'), prev_kv: true } },
      { request_txn: { success: [{ request_range: { key: B('k') } }, { request_put: { key: B('o'), value: B('v2') } }] } },
    ],
  });
  assert.deepStrictEqual(resp, {
    header: hdr(4),
    succeeded: true,
    responses: [
      { response: 'response_range', response_range: { header: inner(3), kvs: [kv('k', 2, 2, 1, 'v1')], more: false, count: '1' } },
      { response: 'response_put', response_put: { header: inner(4), prev_kv: kv('k', 2, 2, 1, 'v1') } },
      { response: 'response_range', response_range: { header: inner(4), kvs: [kv('k', 2, 4, 2, 'v2')], more: false, count: '1' } },
      { response: 'response_delete_range', response_delete_range: { header: inner(4), deleted: '1', prev_kvs: [kv('m', 3, 3, 1, 'v1')] } },
      {
        response: 'response_txn',
        response_txn: {
          header: inner(0),
          succeeded: true,
          responses: [
            { response: 'response_range', response_range: { header: inner(4), kvs: [kv('k', 2, 4, 2, 'v2')], more: false, count: '1' } },
            { response: 'response_put', response_put: { header: inner(4), prev_kv: null } },
          ],
        },
      },
    ],
  });
  assert.deepStrictEqual(k.txn({}), { header: hdr(4), succeeded: true, responses: [] });
});

test('txn compares: the oneof member named by target_union is the operand; enums by name or number', () => {
  const { services: { kv: k } } = newSim();
  k.put({ key: B('a'), value: B('1') });
  const ok = (c: Parameters<typeof k.txn>[0]['compare']): boolean => k.txn({ compare: c }).succeeded;
  assert.equal(ok([{ key: B('a'), target: 'VERSION', result: 'EQUAL', target_union: 'version', version: '1' }]), true);
  // VERSION target with the union set as value: version compared against 0 → false (observed).
  assert.equal(ok([{ key: B('a'), target: 'VERSION', result: 'EQUAL', target_union: 'value', value: B('1') }]), false);
  assert.equal(ok([{ key: B('a'), target: 3, result: 0, value: B('1') }]), true); // VALUE EQUAL "1"
  assert.equal(ok([{ key: B('a'), target: 'VALUE', result: 'GREATER', value: B('0') }]), true);
  assert.equal(ok([{ key: B('missing'), target: 'CREATE', result: 'EQUAL', create_revision: '0' }]), true);
  assert.equal(ok([{ key: B('a'), target: 'MOD', result: 'LESS', mod_revision: '9223372036854775807' }]), true);
  assert.equal(ok([{ key: B('a'), target: 'LEASE', result: 'EQUAL', lease: '0' }]), true);
  assert.equal(ok([{ key: B('a'), target: 'VERSION', result: 'NOT_EQUAL', version: 1 }]), false);
});

test('bytes: request Buffers may be slices of a larger message; responses are private copies', () => {
  const { services: { kv: k } } = newSim();
  const wire = Buffer.from('xxKEYVALUEyy');
  const key = wire.subarray(2, 5);
  const value = wire.subarray(5, 10);
  k.put({ key, value });
  wire.fill(0);
  const got = k.range({ key: B('KEY') }).kvs[0]!;
  assert.deepStrictEqual(got, kv('KEY', 2, 2, 1, 'VALUE'));
  got.value.fill(0x21);
  got.key.fill(0x21);
  assert.deepStrictEqual(k.range({ key: B('KEY') }).kvs[0], kv('KEY', 2, 2, 1, 'VALUE'));
  // A Uint8Array works as well as a Buffer; a string in a bytes field is base64, as protobufjs reads it.
  k.put({ key: new Uint8Array([0, 1, 2]), value: new Uint8Array([0xff]) });
  assert.deepStrictEqual(k.range({ key: Buffer.from([0, 1, 2]) }).kvs[0]!.value, Buffer.from([0xff]));
  k.put({ key: Buffer.from('b64').toString('base64') as unknown as Uint8Array, value: B('x') });
  assert.equal(k.range({ key: B('b64') }).count, '1');
});

test('lenient like protobuf decoding: missing fields are zero values', () => {
  const { services: { kv: k } } = newSim();
  assertGrpcError(() => k.range({}), 3, 'etcdserver: key is not provided', 'INVALID_ARGUMENT');
  assertGrpcError(() => k.put({}), 3, 'etcdserver: key is not provided', 'INVALID_ARGUMENT');
  assertGrpcError(() => k.deleteRange({}), 3, 'etcdserver: key is not provided', 'INVALID_ARGUMENT');
  assert.deepStrictEqual(k.put({ key: B('e') }), { header: hdr(2), prev_kv: null });
  assert.deepStrictEqual(k.range({ key: B('e') }).kvs, [kv('e', 2, 2, 1, '')]);
  // A RequestOp with no member set is etcd's "key not found" quirk, on either branch.
  assertGrpcError(() => k.txn({ failure: [{}] }), 3, 'etcdserver: key not found', 'INVALID_ARGUMENT');
  assert.deepStrictEqual(k.compact({}), { header: hdr(2) }); // first Compact(0) succeeds
});
