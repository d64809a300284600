// A Txn's checks in one walk (src/mvcc/validate.ts, checkTxnOnce) answer as the steps they replaced, run one
// after the other as etcd runs them: the shape of every message (checkTxnShape), v3rpc's checkTxnRequest (the
// naive reference's: --max-txn-ops, a nested txn against what its parent left, keys, each op's checks, an empty op), then
// checkIntervals on both branches — the same first error, or, for a txn that passes, the same answer to "does it
// only read" (isTxnReadOnly) and the same proposal size (txnSize), on random txns with wrong types, empty keys,
// bad sort options, two requests in one op and nested txns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MvccStore, type Compare, type RequestOp, type TxnRequest } from '../../src/index.js';
import { checkIntervals, isTxnReadOnly } from '../../src/mvcc/validate.js';
import { checkTxnShape } from '../../src/mvcc/shape.js';
import { raftRequestSize, txnSize } from '../../src/mvcc/request_size.js';
import { checkProperty } from '../properties/harness.js';
import { RELEASE_RULES, validateTxn as referenceCheckTxnRequest } from '../properties/model/reference_kv.js';
import { b } from './helpers.js';

type Outcome = { readonly error: string } | { readonly readOnly: boolean; readonly size: number };

const errorOf = (err: unknown): string => (err instanceof Error ? `${err.constructor.name}: ${err.message}` : `thrown ${String(err)}`);

/** The steps one after the other: shape, checkTxnRequest, checkIntervals on each branch (every branch walked). */
function steps(r: TxnRequest, maxTxnOps: number, etcdVersion: '3.4' | '3.7'): Outcome {
  try {
    checkTxnShape(r);
    referenceCheckTxnRequest(r, maxTxnOps, RELEASE_RULES[etcdVersion]); // etcd's checkTxnRequest, written naively
    checkIntervals(r.success ?? []);
    checkIntervals(r.failure ?? []);
  } catch (err) {
    return { error: errorOf(err) };
  }
  return { readOnly: isTxnReadOnly(r), size: txnSize(r) };
}

/** The store's steps: validateTxn's one walk, then readOnlyTxn, and checkTxnSize at the size's edge either side. */
function once(r: TxnRequest, maxTxnOps: number, etcdVersion: '3.4' | '3.7', size: number): Outcome {
  const fits = new MvccStore({ maxTxnOps, etcdVersion, maxRequestBytes: raftRequestSize(size) });
  const tooSmall = new MvccStore({ maxTxnOps, etcdVersion, maxRequestBytes: raftRequestSize(size) - 1 });
  let v;
  try {
    v = fits.validateTxn(r);
    tooSmall.validateTxn(r);
  } catch (err) {
    return { error: errorOf(err) };
  }
  fits.checkTxnSize(v); // throws if the walk's size is larger than txnSize's
  const over = (() => {
    try {
      tooSmall.checkTxnSize(v);
      return false;
    } catch {
      return true;
    }
  })();
  return { readOnly: fits.readOnlyTxn(v) !== undefined, size: over ? size : -1 };
}

const JUNK: readonly unknown[] = ['text', 42, null, {}, [1], true, 7n, 1.5];
const junk = fc.constantFrom(...JUNK);
/** Mostly `a`, now and then a value of the wrong type. */
const typed = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 150, arbitrary: a }, { weight: 1, arbitrary: junk });
const opt = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined, freq: 3 });
const key = fc.oneof({ weight: 30, arbitrary: fc.constantFrom(b('a'), b('b'), b('ab'), b('c')) }, { weight: 1, arbitrary: fc.constant(b('')) });
const end = fc.constantFrom(b(''), b('\0'), b('b'), b('d'));

const range = fc.record({
  key: typed(key),
  rangeEnd: opt(typed(end)),
  limit: opt(typed(fc.nat({ max: 300 }))),
  revision: opt(typed(fc.integer({ min: -2, max: 5 }))),
  sortOrder: opt(fc.constantFrom('NONE', 'ASCEND', 'DESCEND', 'NONE', 'ASCEND', 'DESCEND', 'Descend', 7)),
  sortTarget: opt(fc.constantFrom('KEY', 'MOD', 'VALUE', 'KEY', 'MOD', 'VALUE', 'Mod')),
  serializable: opt(typed(fc.boolean())),
  countOnly: opt(typed(fc.boolean())),
});
const put = fc.record({
  key: typed(key),
  value: opt(typed(fc.constantFrom(b(''), b('v'), b('x'.repeat(200))))),
  lease: opt(typed(fc.constantFrom(0n, 5n, 2n ** 40n))),
  prevKv: opt(typed(fc.boolean())),
  ignoreValue: opt(typed(fc.boolean())),
  ignoreLease: opt(typed(fc.boolean())),
});
const del = fc.record({ key: typed(key), rangeEnd: opt(typed(end)), prevKv: opt(fc.boolean()) });
const compare = fc.record({
  key: typed(key),
  rangeEnd: opt(typed(end)),
  target: fc.constantFrom('VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE'),
  result: fc.constantFrom('EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'),
  version: opt(typed(fc.nat({ max: 200 }))),
  modRevision: opt(typed(fc.nat({ max: 5 }))),
  value: opt(typed(fc.constantFrom(b('v'), b('')))),
  lease: opt(typed(fc.constantFrom(0n, 3n))),
});

const { txn } = fc.letrec<{ txn: unknown; op: unknown }>((tie) => ({
  txn: fc.record({
    compare: fc.oneof({ weight: 60, arbitrary: fc.array(typed(compare), { maxLength: 3 }) }, { weight: 1, arbitrary: fc.constantFrom(undefined, 'text', {}) }),
    success: fc.oneof({ weight: 60, arbitrary: fc.array(tie('op'), { maxLength: 4 }) }, { weight: 1, arbitrary: fc.constantFrom(undefined, 7, null) }),
    failure: fc.oneof({ weight: 60, arbitrary: fc.array(tie('op'), { maxLength: 4 }) }, { weight: 1, arbitrary: fc.constantFrom(undefined, 'x') }),
  }),
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 16, arbitrary: range.map((requestRange) => ({ requestRange })) },
    { weight: 16, arbitrary: put.map((requestPut) => ({ requestPut })) },
    { weight: 8, arbitrary: del.map((requestDeleteRange) => ({ requestDeleteRange })) },
    { weight: 8, arbitrary: tie('txn').map((requestTxn) => ({ requestTxn })) },
    { weight: 1, arbitrary: fc.constant({}) },
    // two requests in one op: protobuf's oneof never has them, a JavaScript caller can
    { weight: 1, arbitrary: fc.tuple(put, tie('txn')).map(([requestPut, requestTxn]) => ({ requestPut, requestTxn })) },
    { weight: 1, arbitrary: fc.tuple(range, tie('txn')).map(([requestRange, requestTxn]) => ({ requestRange, requestTxn })) },
    { weight: 1, arbitrary: junk },
  ),
}));

test('one walk over a txn: the same first error as the steps, else the same read-only answer and proposal size', () => {
  const seen = new Map<string, number>();
  checkProperty(
    fc.property(txn, fc.oneof({ weight: 3, arbitrary: fc.constant(128) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: 5 }) }), fc.constantFrom<'3.4' | '3.7'>('3.4', '3.7'), (t, maxTxnOps, etcdVersion) => {
      const r = t as TxnRequest;
      const want = steps(r, maxTxnOps, etcdVersion);
      const got = once(r, maxTxnOps, etcdVersion, 'size' in want ? want.size : 1);
      assert.deepEqual(got, want);
      const kind = 'error' in want ? want.error.replace(/: .*etcdsim: .*/, ': a shape') : want.readOnly ? 'read' : 'write';
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
    }),
    { file: 'test/mvcc/txn_once.test.ts', numRuns: 3000 },
  );
  // the runs reach every outcome (a property whose txns all failed one way would judge little)
  const kinds = [...seen.keys()].sort();
  for (const k of ['read', 'write', 'EtcdError: a shape', 'EtcdError: etcdserver: too many operations in txn request', 'EtcdError: etcdserver: key is not provided', 'EtcdError: etcdserver: key not found', 'EtcdError: etcdserver: invalid sort option', 'EtcdError: etcdserver: duplicate key given in txn request']) {
    assert.ok(kinds.includes(k), `no run ended in ${k}: ${JSON.stringify([...seen])}`);
  }
});

test('a compare-and-swap is validated, sized and applied; two puts of a key in a branch collide; one txn\'s facts never answer for another', () => {
  const s = new MvccStore();
  s.put({ key: b('k'), value: b('0') });
  const cas = (success: RequestOp[]): TxnRequest => ({
    compare: [{ key: b('k'), target: 'MOD', result: 'GREATER', modRevision: 0 } satisfies Compare],
    success,
    failure: [{ requestRange: { key: b('k') } }],
  });
  const v = s.validateTxn(cas([{ requestPut: { key: b('k'), value: b('1') } }]));
  assert.equal(s.readOnlyTxn(v), undefined);
  assert.equal(s.applyTxn(s.checkTxnSize(v)).succeeded, true);
  const twice = cas([{ requestPut: { key: b('k'), value: b('1') } }, { requestPut: { key: b('k'), value: b('2') } }]);
  assert.throws(() => s.validateTxn(twice), { message: 'etcdserver: duplicate key given in txn request' });
  // the facts of one txn are never read for another: a read-only txn validated last does not make this one a read
  const read = s.validateTxn({ success: [{ requestRange: { key: b('k') } }] });
  assert.notEqual(s.readOnlyTxn(read), undefined);
  assert.equal(s.readOnlyTxn(v), undefined);
});
