// The bytes etcd marshals, against a reference written apart (test/properties/model/reference_proto.ts:
// protobufjs over etcd's .proto files, and a naive BigInt varint). src/mvcc/wire.ts writes mvccpb.KeyValue as
// etcd's backend stores it (HashKV hashes those bytes, the gRPC codec builds on the same primitives);
// src/mvcc/request_size.ts measures the InternalRaftRequest etcd compares with --max-request-bytes. Sizes
// are drawn at the varint boundaries (lengths 127/128 and 16383/16384, integers at every 7-bit step, negative
// int64s, uint64s past 2^63), and the store is asked to refuse a write exactly one byte over its limit and
// to take it at the limit.
//
// Compare's integer operand is a oneof member, which Go writes even when it is 0 (two bytes): the compares
// below draw 0 often (a create-if-absent txn compares version or create_revision with 0). request_size.ts
// left such an operand out, two bytes short a compare, until session 17.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MvccStore } from '../../src/mvcc/kv.js';
import { ErrRequestTooLarge } from '../../src/mvcc/errors.js';
import { deleteRangeSize, putSize, raftRequestSize, rangeSize, txnSize, varintLen } from '../../src/mvcc/request_size.js';
import { bytesFieldSize, int64Bits, int64FieldSize, keyValueSize, marshalKeyValue, varintSize, WireWriter, writeBytesField, writeInt64Field, writeKeyValue } from '../../src/mvcc/wire.js';
import type { Compare, CompareResult, CompareTarget, DeleteRangeRequest, KeyValue, PutRequest, RangeRequest, RequestOp, SortOrder, SortTarget, TxnRequest } from '../../src/mvcc/types.js';
import { checkProperty } from './harness.js';
import { encodedRequest, naiveInt64Varint, naiveVarint, raftRequestBytes, referenceKeyValue, type RaftBody } from './model/reference_proto.js';

const FILE = 'test/properties/wire.property.test.ts';

/** Bytes of a length at or near a varint boundary, or short random bytes. */
const bytesArb = (minLength = 0): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.uint8Array({ minLength, maxLength: 6 }) },
    { weight: 2, arbitrary: fc.integer({ min: 125, max: 131 }).map((n) => new Uint8Array(n).fill(0x61)) },
    { weight: 1, arbitrary: fc.integer({ min: 16382, max: 16386 }).map((n) => new Uint8Array(n).fill(0x7a)) },
  );

/** Integers at and around every 7-bit step of a varint, up to 2^53 - 1, both signs. */
const safeIntArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: 0, max: 7 }).chain((g) => fc.integer({ min: -2, max: 1 }).map((d) => Math.min(Number.MAX_SAFE_INTEGER, 2 ** (7 * g + 7) + d))),
  fc.constantFrom(0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER),
  fc.integer({ min: -3, max: 300 }),
  fc.constantFrom(-1, -128, -(2 ** 31), -(2 ** 40), Number.MIN_SAFE_INTEGER),
  fc.maxSafeInteger(),
);

/** int64s at the varint steps and the ends of the range. */
const int64Arb: fc.Arbitrary<bigint> = fc.oneof(
  safeIntArb.map(BigInt),
  fc.constantFrom(2n ** 63n - 1n, -(2n ** 63n), 2n ** 56n, 2n ** 56n - 1n, 2n ** 62n),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
);

/** uint64s, the values a varint carries. */
const uint64Arb: fc.Arbitrary<bigint> = fc.oneof(int64Arb.map((v) => BigInt.asUintN(64, v)), fc.constantFrom(2n ** 64n - 1n, 2n ** 63n, 0n, 127n, 128n));

const kvArb: fc.Arbitrary<KeyValue> = fc.record({
  key: bytesArb(1),
  createRevision: fc.oneof(safeIntArb, fc.constant(0)),
  modRevision: fc.oneof(safeIntArb, fc.constant(0)),
  version: fc.oneof(safeIntArb, fc.constant(0)),
  value: bytesArb(),
  lease: fc.oneof(int64Arb, fc.constant(0n)),
});

test('KeyValue bytes and varints agree with protobufjs and a naive varint', () => {
  checkProperty(
    fc.property(
      kvArb,
      fc.boolean(),
      fc.array(fc.oneof(safeIntArb.filter((v) => v >= 0), uint64Arb), { maxLength: 6 }),
      fc.array(fc.tuple(fc.integer({ min: 1, max: 2 ** 20 }), fc.oneof(safeIntArb, int64Arb)), { maxLength: 4 }),
      fc.array(fc.tuple(fc.integer({ min: 1, max: 2 ** 20 }), bytesArb()), { maxLength: 3 }),
      (kv, tombstone, varints, ints, fields) => {
        const want = Buffer.from(referenceKeyValue(kv, tombstone));
        assert.deepEqual(Buffer.from(marshalKeyValue(kv, tombstone)), want, 'marshalKeyValue');
        if (!tombstone) assert.equal(keyValueSize(kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease), want.length, 'keyValueSize');
        // The same KeyValue through an output buffer given to the writer (a snapshot file laid out in place), at an offset.
        const size = keyValueSize(kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
        const over = Buffer.alloc(size + 3, 0xee);
        const o = new WireWriter(0, over);
        o.pos = 2;
        writeKeyValue(o, kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
        assert.equal(o.buf, over, 'writes into the buffer it was given');
        assert.equal(o.pos, size + 2);
        assert.deepEqual(over.subarray(2, size + 2), Buffer.from(referenceKeyValue(kv, false)), 'in place');
        assert.deepEqual([over[0], over[1], over[size + 2]], [0xee, 0xee, 0xee], 'nothing outside it');

        // Varints of unsigned values, as numbers and as bigints.
        for (const v of varints) {
          const want = naiveVarint(BigInt(v));
          assert.equal(varintSize(v), want.length, `varintSize(${v})`);
          const w = new WireWriter(want.length);
          w.varint(v);
          assert.deepEqual([...w.buf], want, `varint(${v})`);
          assert.equal(w.pos, want.length);
          if (typeof v === 'bigint' && v <= 2n ** 63n - 1n) assert.equal(varintLen(v), want.length, `varintLen(${v}n)`);
          if (typeof v === 'number') assert.equal(varintLen(v), want.length, `varintLen(${v})`);
        }
        // int64 fields (numbers up to 2^20: wire.ts computes a tag in 32-bit arithmetic, and etcd's fields are
        // below 200): a negative value is ten bytes of two's complement; 0 is left out.
        for (const [field, v] of ints) {
          const big = BigInt(v);
          const key = naiveVarint(BigInt(field * 8));
          const want = big === 0n ? [] : [...key, ...naiveInt64Varint(big)];
          assert.equal(int64Bits(v), typeof v === 'number' && v >= 0 ? v : BigInt.asUintN(64, big), `int64Bits(${v})`);
          assert.equal(int64FieldSize(field, v), want.length, `int64FieldSize(${field}, ${v})`);
          const w = new WireWriter(want.length);
          writeInt64Field(w, field, v);
          assert.deepEqual([...w.buf.subarray(0, w.pos)], want, `writeInt64Field(${field}, ${v})`);
          if (big < 0n) assert.equal(varintLen(v), 10, `varintLen(${v})`);
        }
        for (const [field, v] of fields) {
          const want = v.length === 0 ? [] : [...naiveVarint(BigInt(field * 8 + 2)), ...naiveVarint(BigInt(v.length)), ...v];
          assert.equal(bytesFieldSize(field, v), want.length, `bytesFieldSize(${field}, ${v.length} bytes)`);
          const w = new WireWriter(want.length);
          writeBytesField(w, field, v);
          assert.equal(w.pos, want.length);
          assert.ok(Buffer.from(w.buf.subarray(0, w.pos)).equals(Buffer.from(want)), `writeBytesField(${field}, ${v.length} bytes)`);
        }
      },
    ),
    { file: FILE, numRuns: 300 },
  );
});

const revArb: fc.Arbitrary<number | undefined> = fc.option(safeIntArb, { nil: undefined, freq: 3 });
const flagArb: fc.Arbitrary<boolean | undefined> = fc.option(fc.boolean(), { nil: undefined });

const rangeArb: fc.Arbitrary<RangeRequest> = fc.record({
  key: bytesArb(1),
  rangeEnd: fc.option(bytesArb(), { nil: undefined }),
  limit: revArb,
  revision: revArb,
  sortOrder: fc.option(fc.constantFrom<SortOrder>('NONE', 'ASCEND', 'DESCEND'), { nil: undefined }),
  sortTarget: fc.option(fc.constantFrom<SortTarget>('KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'), { nil: undefined }),
  serializable: flagArb,
  keysOnly: flagArb,
  countOnly: flagArb,
  minModRevision: revArb,
  maxModRevision: revArb,
  minCreateRevision: revArb,
  maxCreateRevision: revArb,
});

const putArb: fc.Arbitrary<PutRequest> = fc.record({
  key: bytesArb(1),
  value: fc.option(bytesArb(), { nil: undefined }),
  // An explicit 0n is no lease (left out of the encoding, as Go leaves a 0 out): drawn often.
  lease: fc.option(fc.oneof(fc.constant(0n), int64Arb), { nil: undefined }),
  prevKv: flagArb,
  ignoreValue: flagArb,
  ignoreLease: flagArb,
});

const deleteArb: fc.Arbitrary<DeleteRangeRequest> = fc.record({ key: bytesArb(1), rangeEnd: fc.option(bytesArb(), { nil: undefined }), prevKv: flagArb });

const compareArb: fc.Arbitrary<Compare> = fc
  .record({
    key: bytesArb(1),
    rangeEnd: fc.option(bytesArb(), { nil: undefined }),
    result: fc.constantFrom<CompareResult>('EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'),
    target: fc.constantFrom<CompareTarget>('VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE'),
    n: fc.option(fc.oneof(fc.constant(0), safeIntArb), { nil: undefined }),
    value: fc.option(bytesArb(), { nil: undefined }),
    lease: fc.option(fc.oneof(fc.constant(0n), int64Arb), { nil: undefined }),
  })
  .map(({ n, value, lease, ...c }): Compare => {
    if (c.target === 'VERSION') return { ...c, version: n };
    if (c.target === 'CREATE') return { ...c, createRevision: n };
    if (c.target === 'MOD') return { ...c, modRevision: n };
    if (c.target === 'VALUE') return { ...c, value };
    return { ...c, lease };
  });

const { txnArb } = fc.letrec<{ txnArb: TxnRequest; opArb: RequestOp }>((tie) => ({
  opArb: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ requestRange: rangeArb }),
    fc.record({ requestPut: putArb }),
    fc.record({ requestDeleteRange: deleteArb }),
    fc.record({ requestTxn: tie('txnArb') as fc.Arbitrary<TxnRequest> }),
    fc.constant({}),
  ),
  txnArb: fc.record(
    {
      compare: fc.array(compareArb, { maxLength: 3 }),
      success: fc.array(tie('opArb') as fc.Arbitrary<RequestOp>, { maxLength: 3 }),
      failure: fc.array(tie('opArb') as fc.Arbitrary<RequestOp>, { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
}));

const bodyArb: fc.Arbitrary<RaftBody> = fc.oneof(
  putArb.map((put) => ({ put })),
  deleteArb.map((deleteRange) => ({ deleteRange })),
  txnArb.map((txn) => ({ txn })),
  rangeArb.map((range) => ({ range })),
);

function ownSize(b: RaftBody): number {
  if ('put' in b) return putSize(b.put);
  if ('deleteRange' in b) return deleteRangeSize(b.deleteRange);
  if ('txn' in b) return txnSize(b.txn);
  return rangeSize(b.range);
}

/** The store's size step for a write `b`, on a store whose limit is `limit`; undefined when its validation refuses it. */
function sizeStep(b: RaftBody, limit: number): 'fits' | 'too large' | undefined {
  const store = new MvccStore({ maxRequestBytes: limit });
  let step: () => unknown;
  try {
    if ('put' in b) {
      const v = store.validatePut(b.put);
      step = () => store.checkPutSize(v);
    } else if ('deleteRange' in b) {
      const v = store.validateDeleteRange(b.deleteRange);
      step = () => store.checkDeleteRangeSize(v);
    } else if ('txn' in b) {
      const v = store.validateTxn(b.txn);
      step = () => store.checkTxnSize(v);
    } else return undefined;
  } catch {
    return undefined;
  }
  try {
    step();
    return 'fits';
  } catch (err) {
    assert.equal((err as Error).message, ErrRequestTooLarge.message);
    return 'too large';
  }
}

test('request sizes agree with protobufjs over etcd.proto, and the store refuses a write one byte over --max-request-bytes', () => {
  checkProperty(
    // Several requests a run, so that the mutation tests' 60 runs still see a few hundred.
    fc.property(fc.array(bodyArb, { minLength: 1, maxLength: 4 }), (bodies) => {
      for (const b of bodies) {
        const own = encodedRequest(b).length;
        assert.equal(ownSize(b), own, 'the request encoded');
        const raft = raftRequestBytes(b);
        assert.equal(raftRequestSize(own), raft, 'the InternalRaftRequest');
        const atLimit = sizeStep(b, raft);
        if (atLimit === undefined) continue;
        assert.equal(atLimit, 'fits', `a proposal of ${raft} bytes fits a limit of ${raft}`);
        assert.equal(sizeStep(b, raft - 1), 'too large', `a proposal of ${raft} bytes is over a limit of ${raft - 1}`);
      }
    }),
    { file: FILE, numRuns: 300 },
  );
});
