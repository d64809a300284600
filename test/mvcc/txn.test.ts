import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ErrCompacted,
  ErrDuplicateKey,
  ErrEmptyKey,
  ErrFutureRev,
  ErrInvalidSortOption,
  ErrKeyNotFound,
  ErrLeaseNotFound,
  ErrTooManyOps,
  ErrValueProvided,
  MvccStore,
  prefixEnd,
  type Compare,
  type CompareResult,
  type RequestOp,
  type ResponseOp,
  type SortOrder,
  type TxnResponse,
} from '../../src/index.js';
import { assertUnchanged, b, expectError, FakeLessor, get, keysOf, kv, NUL, valuesOf } from './helpers.js';

const put = (key: string, value = ''): RequestOp => ({ requestPut: { key: b(key), value: b(value) } });
const del = (key: string, rangeEnd?: Uint8Array): RequestOp => ({ requestDeleteRange: { key: b(key), rangeEnd } });
const rng = (key: string, rangeEnd?: Uint8Array): RequestOp => ({ requestRange: { key: b(key), rangeEnd } });

function rangeOf(r: ResponseOp | undefined): { revision: number; keys: string[]; values: string[] } {
  assert.ok(r !== undefined && 'responseRange' in r, 'expected a range response');
  return { revision: r.responseRange.revision, keys: keysOf(r.responseRange.kvs), values: valuesOf(r.responseRange.kvs) };
}
function txnOf(r: ResponseOp | undefined): TxnResponse {
  assert.ok(r !== undefined && 'responseTxn' in r, 'expected a txn response');
  return r.responseTxn;
}

const RESULTS: CompareResult[] = ['EQUAL', 'NOT_EQUAL', 'GREATER', 'LESS'];
function holds(result: CompareResult, c: number): boolean {
  return result === 'EQUAL' ? c === 0 : result === 'NOT_EQUAL' ? c !== 0 : result === 'GREATER' ? c > 0 : c < 0;
}

/** k: value "m", create 2, mod 4, version 2, lease 5. */
function compareFixture(): MvccStore {
  const s = new MvccStore({ lessor: new FakeLessor([5n]) });
  s.put({ key: b('k'), value: b('first') }); // 2
  s.put({ key: b('x') }); // 3
  s.put({ key: b('k'), value: b('m'), lease: 5n }); // 4
  return s;
}

function succeeded(s: MvccStore, c: Compare): boolean {
  return s.txn({ compare: [c] }).succeeded;
}

test('compare: every numeric target x every result against lower, equal and higher operands', () => {
  const s = compareFixture();
  const actual = { VERSION: 2, CREATE: 2, MOD: 4 } as const;
  for (const [target, value] of Object.entries(actual) as ['VERSION' | 'CREATE' | 'MOD', number][]) {
    for (const operand of [value - 1, value, value + 1]) {
      for (const result of RESULTS) {
        const field = target === 'VERSION' ? 'version' : target === 'CREATE' ? 'createRevision' : 'modRevision';
        const c: Compare = { key: b('k'), target, result, [field]: operand };
        assert.equal(succeeded(s, c), holds(result, Math.sign(value - operand)), `${target} ${result} ${operand}`);
      }
    }
  }
  for (const operand of [4n, 5n, 6n]) {
    for (const result of RESULTS) {
      assert.equal(succeeded(s, { key: b('k'), target: 'LEASE', result, lease: operand }), holds(result, Number(5n - operand)), `LEASE ${result} ${operand}`);
    }
  }
  assert.equal(s.currentRevision, 4);
});

test('compare VALUE: byte order against shorter, equal, longer and other values', () => {
  const s = compareFixture();
  const cases: [string, number][] = [['l', 1], ['m', 0], ['n', -1], ['m\0', -1], ['', 1], ['lzzz', 1]];
  for (const [operand, c] of cases) {
    for (const result of RESULTS) {
      assert.equal(succeeded(s, { key: b('k'), target: 'VALUE', result, value: b(operand) }), holds(result, c), `VALUE ${result} ${JSON.stringify(operand)}`);
    }
  }
});

test('compare with no operand uses the zero value', () => {
  const s = compareFixture();
  assert.equal(succeeded(s, { key: b('k'), target: 'VERSION', result: 'GREATER' }), true);
  assert.equal(succeeded(s, { key: b('k'), target: 'CREATE', result: 'EQUAL' }), false);
  assert.equal(succeeded(s, { key: b('k'), target: 'LEASE', result: 'GREATER' }), true);
  assert.equal(succeeded(s, { key: b('k'), target: 'VALUE', result: 'GREATER' }), true);
  assert.equal(succeeded(s, { key: b('x'), target: 'VALUE', result: 'EQUAL' }), true);
});

test('compare on a missing key: zero values, except VALUE which always fails', () => {
  const s = compareFixture();
  const missing = b('nope');
  assert.equal(succeeded(s, { key: missing, target: 'VERSION', result: 'EQUAL', version: 0 }), true);
  assert.equal(succeeded(s, { key: missing, target: 'CREATE', result: 'EQUAL', createRevision: 0 }), true);
  assert.equal(succeeded(s, { key: missing, target: 'MOD', result: 'LESS', modRevision: 1 }), true);
  assert.equal(succeeded(s, { key: missing, target: 'LEASE', result: 'EQUAL', lease: 0n }), true);
  assert.equal(succeeded(s, { key: missing, target: 'VERSION', result: 'GREATER', version: 0 }), false);
  for (const result of RESULTS) {
    assert.equal(succeeded(s, { key: missing, target: 'VALUE', result, value: b('') }), false, `VALUE ${result} ''`);
    assert.equal(succeeded(s, { key: missing, target: 'VALUE', result, value: b('z') }), false, `VALUE ${result} 'z'`);
  }
  // A key that was deleted is missing too.
  s.deleteRange({ key: b('x') });
  assert.equal(succeeded(s, { key: b('x'), target: 'CREATE', result: 'EQUAL', createRevision: 0 }), true);
  assert.equal(succeeded(s, { key: b('x'), target: 'VALUE', result: 'EQUAL', value: b('') }), false);
});

test('compare over a range: every key must satisfy it; an empty range compares as one missing key', () => {
  const s = new MvccStore();
  s.put({ key: b('p/1'), value: b('a') });
  s.put({ key: b('p/2'), value: b('b') });
  s.put({ key: b('p/2'), value: b('b') });
  s.put({ key: b('q'), value: b('z') });
  const p = { key: b('p/'), rangeEnd: prefixEnd(b('p/')) };
  assert.equal(succeeded(s, { ...p, target: 'VERSION', result: 'GREATER', version: 0 }), true);
  assert.equal(succeeded(s, { ...p, target: 'VERSION', result: 'EQUAL', version: 1 }), false);
  assert.equal(succeeded(s, { ...p, target: 'VERSION', result: 'LESS', version: 3 }), true);
  assert.equal(succeeded(s, { ...p, target: 'VERSION', result: 'LESS', version: 2 }), false);
  assert.equal(succeeded(s, { ...p, target: 'VALUE', result: 'LESS', value: b('c') }), true);
  assert.equal(succeeded(s, { ...p, target: 'VALUE', result: 'EQUAL', value: b('a') }), false);
  assert.equal(succeeded(s, { ...p, target: 'MOD', result: 'GREATER', modRevision: 1 }), true);
  assert.equal(succeeded(s, { ...p, target: 'CREATE', result: 'NOT_EQUAL', createRevision: 2 }), false);
  // From key: p/1, p/2, q.
  assert.equal(succeeded(s, { key: b('p/'), rangeEnd: NUL, target: 'VALUE', result: 'LESS', value: b('c') }), false);
  assert.equal(succeeded(s, { key: NUL, rangeEnd: NUL, target: 'CREATE', result: 'GREATER', createRevision: 0 }), true);
  // Empty range: zero values; VALUE fails.
  const none = { key: b('r'), rangeEnd: b('s') };
  assert.equal(succeeded(s, { ...none, target: 'VERSION', result: 'EQUAL', version: 0 }), true);
  assert.equal(succeeded(s, { ...none, target: 'CREATE', result: 'GREATER', createRevision: 0 }), false);
  assert.equal(succeeded(s, { ...none, target: 'VALUE', result: 'NOT_EQUAL', value: b('x') }), false);
});

test('several compares: all must hold', () => {
  const s = compareFixture();
  const ok: Compare = { key: b('k'), target: 'VERSION', result: 'EQUAL', version: 2 };
  const bad: Compare = { key: b('k'), target: 'VALUE', result: 'EQUAL', value: b('other') };
  assert.equal(s.txn({ compare: [ok, ok] }).succeeded, true);
  assert.equal(s.txn({ compare: [ok, bad] }).succeeded, false);
  assert.equal(s.txn({ compare: [bad, ok] }).succeeded, false);
});

test('success and failure branches run Range, Put, DeleteRange and nested Txn', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  s.put({ key: b('gone'), value: b('g') }); // 3
  const branch = (tag: string): RequestOp[] => [
    rng('a'),
    put(`${tag}-put`, tag),
    del('gone'),
    { requestTxn: { success: [put(`${tag}-nested`, tag)] } },
  ];
  const ok = s.txn({ compare: [{ key: b('a'), target: 'VALUE', result: 'EQUAL', value: b('1') }], success: branch('then'), failure: branch('else') });
  assert.equal(ok.succeeded, true);
  assert.equal(ok.revision, 4);
  assert.equal(ok.responses.length, 4);
  assert.deepStrictEqual(rangeOf(ok.responses[0]), { revision: 3, keys: ['a'], values: ['1'] });
  assert.deepStrictEqual(ok.responses[1], { responsePut: { revision: 4 } });
  assert.deepStrictEqual(ok.responses[2], { responseDeleteRange: { revision: 4, deleted: 1, prevKvs: [] } });
  assert.deepStrictEqual(txnOf(ok.responses[3]), { revision: 0, succeeded: true, responses: [{ responsePut: { revision: 4 } }] });
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs), ['a', 'then-nested', 'then-put']);

  s.put({ key: b('gone'), value: b('g') }); // 5
  const no = s.txn({ compare: [{ key: b('a'), target: 'VALUE', result: 'EQUAL', value: b('2') }], success: branch('then'), failure: branch('else') });
  assert.equal(no.succeeded, false);
  assert.equal(no.revision, 6);
  assert.deepStrictEqual(no.responses[1], { responsePut: { revision: 6 } });
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs), ['a', 'else-nested', 'else-put', 'then-nested', 'then-put']);
});

test('a whole txn takes one revision; later ops read earlier ones; range revision is current+1 after a write', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('old') }); // 2
  s.put({ key: b('d'), value: b('d') }); // 3
  const r = s.txn({
    success: [
      rng('a'),
      put('a', 'new'),
      rng('a'),
      put('b', 'b'),
      rng('a', b('z')),
      del('d'),
      rng('d'),
      { requestRange: { key: b('a'), revision: 3 } },
    ],
  });
  assert.equal(r.revision, 4);
  assert.equal(s.currentRevision, 4);
  assert.deepStrictEqual(rangeOf(r.responses[0]), { revision: 3, keys: ['a'], values: ['old'] });
  assert.deepStrictEqual(r.responses[1], { responsePut: { revision: 4 } });
  assert.deepStrictEqual(rangeOf(r.responses[2]), { revision: 4, keys: ['a'], values: ['new'] });
  assert.deepStrictEqual(rangeOf(r.responses[4]), { revision: 4, keys: ['a', 'b', 'd'], values: ['new', 'b', 'd'] });
  assert.deepStrictEqual(r.responses[5], { responseDeleteRange: { revision: 4, deleted: 1, prevKvs: [] } });
  assert.deepStrictEqual(rangeOf(r.responses[6]), { revision: 4, keys: [], values: [] });
  // An explicit historical read inside the txn sees the pre-txn value.
  assert.deepStrictEqual(rangeOf(r.responses[7]), { revision: 4, keys: ['a'], values: ['old'] });
  assert.deepStrictEqual(get(s, 'a'), kv('a', 'new', 2, 4, 2));
  assert.deepStrictEqual(get(s, 'b'), kv('b', 'b', 4, 4, 1));
  assert.deepStrictEqual(
    s.eventsAt(4).map((e) => `${e.type} ${Buffer.from(e.kv.key).toString()}`),
    ['PUT a', 'PUT b', 'DELETE d'],
  );
  assert.equal(s.checkValid(), undefined);
});

test('a delete of nothing before any write reports the pre-txn revision; after a write, current+1', () => {
  const s = new MvccStore();
  s.put({ key: b('a') }); // 2
  const r = s.txn({ success: [del('none'), put('a'), del('none2')] });
  assert.deepStrictEqual(r.responses[0], { responseDeleteRange: { revision: 2, deleted: 0, prevKvs: [] } });
  assert.deepStrictEqual(r.responses[2], { responseDeleteRange: { revision: 3, deleted: 0, prevKvs: [] } });
});

test('a put in a txn keeps the version count and create revision of the live key', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  s.txn({ success: [{ requestPut: { key: b('a'), value: b('2'), prevKv: true } }] });
  assert.deepStrictEqual(get(s, 'a'), kv('a', '2', 2, 3, 2));
  const r = s.txn({ success: [{ requestPut: { key: b('a'), ignoreValue: true, prevKv: true } }] });
  assert.deepStrictEqual(r.responses[0], { responsePut: { revision: 4, prevKv: kv('a', '2', 2, 3, 2) } });
  assert.deepStrictEqual(get(s, 'a'), kv('a', '2', 2, 4, 3));
});

test('nested compares are evaluated against the state before the txn', () => {
  const s = new MvccStore();
  s.put({ key: b('other') }); // 2
  const r = s.txn({
    success: [
      put('a', '1'),
      {
        requestTxn: {
          // "a" does not exist before the txn, even though the outer txn has just written it.
          compare: [{ key: b('a'), target: 'CREATE', result: 'EQUAL', createRevision: 0 }],
          success: [put('b', 'saw-absent'), rng('a')],
          failure: [put('b', 'saw-present')],
        },
      },
    ],
  });
  assert.equal(r.revision, 3);
  const nested = txnOf(r.responses[1]);
  assert.equal(nested.succeeded, true);
  assert.equal(nested.revision, 0, 'a nested TxnResponse has revision 0');
  // The nested range, run in order, does see the outer write.
  assert.deepStrictEqual(rangeOf(nested.responses[1]), { revision: 3, keys: ['a'], values: ['1'] });
  assert.deepStrictEqual(valuesOf(s.range({ key: b('b') }).kvs), ['saw-absent']);
});

test('nested txns: deep nesting and branch choice per level', () => {
  const s = new MvccStore();
  s.put({ key: b('flag'), value: b('on') }); // 2
  const on: Compare = { key: b('flag'), target: 'VALUE', result: 'EQUAL', value: b('on') };
  const off: Compare = { key: b('flag'), target: 'VALUE', result: 'EQUAL', value: b('off') };
  const r = s.txn({
    compare: [on],
    success: [
      { requestTxn: { compare: [off], success: [put('x1')], failure: [put('y1'), { requestTxn: { compare: [on], success: [put('z1')], failure: [put('w1')] } }] } },
      { requestTxn: { compare: [on], success: [put('x2')], failure: [put('y2')] } },
    ],
  });
  assert.equal(r.succeeded, true);
  const n1 = txnOf(r.responses[0]);
  assert.equal(n1.succeeded, false);
  assert.equal(txnOf(n1.responses[1]).succeeded, true);
  assert.equal(txnOf(r.responses[1]).succeeded, true);
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs), ['flag', 'x2', 'y1', 'z1']);
  assert.equal(r.revision, 3);
});

test('a failing apply-time check rejects the whole txn with nothing written', () => {
  const lessor = new FakeLessor([1n]);
  const s = new MvccStore({ lessor });
  s.put({ key: b('a'), value: b('1') }); // 2
  s.put({ key: b('b'), value: b('2') }); // 3
  assertUnchanged(s, ErrLeaseNotFound, () => s.txn({ success: [put('x', '1'), { requestPut: { key: b('y'), lease: 7n } }] }), lessor);
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [put('x', '1'), { requestPut: { key: b('missing'), ignoreValue: true } }] }), lessor);
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [del('a'), { requestPut: { key: b('nope'), ignoreLease: true } }] }), lessor);
  assertUnchanged(s, ErrFutureRev, () => s.txn({ success: [put('x', '1'), { requestRange: { key: b('a'), revision: 4 } }] }), lessor);
  // Also inside a nested txn on the taken path.
  assertUnchanged(
    s,
    ErrLeaseNotFound,
    () => s.txn({ success: [put('x', '1'), { requestTxn: { success: [{ requestTxn: { failure: [{ requestPut: { key: b('y'), lease: 9n } }], compare: [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 5 }] } }] } }] }),
    lessor,
  );
  s.compact(3);
  assertUnchanged(s, ErrCompacted, () => s.txn({ success: [put('x', '1'), { requestRange: { key: b('a'), revision: 2 } }] }), lessor);
  // Exactly the compaction revision and the current revision are readable.
  const ok = s.txn({ success: [put('x', '1'), { requestRange: { key: b('a'), revision: 3 } }, { requestRange: { key: b('b'), revision: 3 } }] });
  assert.deepStrictEqual(rangeOf(ok.responses[1]), { revision: 4, keys: ['a'], values: ['1'] });
  assert.equal(ok.revision, 4);
});

test('range revisions in a txn: the current revision is readable (3.5+), negative ones are checked against the compaction floor', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  const r = s.txn({ success: [{ requestRange: { key: b('a'), revision: 2 } }, { requestRange: { key: b('a'), revision: -1 } }] });
  assert.deepStrictEqual(rangeOf(r.responses[0]), { revision: 2, keys: ['a'], values: ['1'] });
  assert.deepStrictEqual(rangeOf(r.responses[1]), { revision: 2, keys: ['a'], values: ['1'] });
  // etcd's checkRange compares a non-zero revision with FirstRev (the compaction revision, -1 before any).
  assertUnchanged(s, ErrCompacted, () => s.txn({ success: [{ requestRange: { key: b('a'), revision: -2 } }] }));
  s.compact(1);
  assertUnchanged(s, ErrCompacted, () => s.txn({ success: [{ requestRange: { key: b('a'), revision: -1 } }] }));
  // A read-only txn with a future-revision range is rejected too.
  assertUnchanged(s, ErrFutureRev, () => s.txn({ success: [{ requestRange: { key: b('a'), revision: 3 } }] }));
});

test('checks run only on the taken path', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  const yes: Compare = { key: b('a'), target: 'VALUE', result: 'EQUAL', value: b('1') };
  const r = s.txn({
    compare: [yes],
    success: [put('ok')],
    failure: [{ requestPut: { key: b('x'), lease: 5n } }, { requestPut: { key: b('missing'), ignoreValue: true } }, { requestRange: { key: b('a'), revision: 99 } }],
  });
  assert.equal(r.succeeded, true);
  assert.equal(r.revision, 3);
  const nested = s.txn({ success: [{ requestTxn: { compare: [yes], failure: [{ requestPut: { key: b('x'), lease: 5n } }], success: [put('ok2')] } }] });
  assert.equal(nested.revision, 4);
});

test('a txn put in a store without a lessor: ErrLeaseNotFound; inside a txn ignore_* is checked before the lease', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  assertUnchanged(s, ErrLeaseNotFound, () => s.txn({ success: [{ requestPut: { key: b('a'), lease: 1n } }] }));
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [{ requestPut: { key: b('missing'), ignoreValue: true, lease: 1n } }] }));
  assertUnchanged(s, ErrValueProvided, () => s.txn({ success: [{ requestPut: { key: b('a'), ignoreValue: true, value: b('v') } }] }));
});

test('duplicate keys in one branch are rejected before anything runs', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  const dup = (success: RequestOp[], failure: RequestOp[] = []): void => {
    assertUnchanged(s, ErrDuplicateKey, () => s.txn({ success, failure }));
    assertUnchanged(s, ErrDuplicateKey, () => s.txn({ success: failure, failure: success }));
  };
  dup([put('k'), put('k')]);
  dup([put('k'), rng('x'), put('k')]);
  dup([del('a', b('c')), put('b')]);
  dup([put('b'), del('a', b('c'))]);
  dup([del('b'), put('b')]);
  dup([del('p/', prefixEnd(b('p/'))), put('p/x')]);
  // Nested txn puts clash with outer puts and deletes, and with each other.
  dup([put('k'), { requestTxn: { success: [put('k')] } }]);
  dup([put('k'), { requestTxn: { failure: [put('k')] } }]);
  dup([del('a', b('z')), { requestTxn: { success: [put('k')] } }]);
  dup([{ requestTxn: { success: [del('a', b('z'))] } }, put('k')]);
  dup([{ requestTxn: { success: [put('k')] } }, { requestTxn: { failure: [put('k')] } }]);
  dup([{ requestTxn: { success: [{ requestTxn: { success: [put('k')] } }] } }, put('k')]);
  dup([{ requestTxn: { success: [put('k'), put('k')] } }]);
  // Even when the compare would pick the other branch: validation is static.
  assertUnchanged(s, ErrDuplicateKey, () => s.txn({ compare: [{ key: b('a'), target: 'VERSION', result: 'EQUAL', version: 1 }], success: [put('ok')], failure: [put('k'), put('k')] }));
});

test('allowed overlaps: across branches, ranges, then/else of one nested txn, and a put within a from-key delete', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('1') }); // 2
  s.put({ key: b('c'), value: b('1') }); // 3
  // The same key in success and failure.
  assert.equal(s.txn({ success: [put('k', '1')], failure: [put('k', '2')] }).revision, 4);
  // A range and a put of the same key.
  assert.equal(s.txn({ success: [rng('k'), put('k', '3'), rng('k')] }).revision, 5);
  // then and else of one nested txn may put the same key: only one of them runs.
  const t = s.txn({ success: [{ requestTxn: { compare: [{ key: b('k'), target: 'VALUE', result: 'EQUAL', value: b('3') }], success: [put('n', 'then')], failure: [put('n', 'else')] } }] });
  assert.equal(t.revision, 6);
  assert.deepStrictEqual(valuesOf(s.range({ key: b('n') }).kvs), ['then']);
  // etcd quirk: a delete with range_end "\0" is an interval that contains nothing for the duplicate check.
  const q = s.txn({ success: [del('b', NUL), put('d', 'new')] });
  assert.equal(q.revision, 7);
  assert.deepStrictEqual(q.responses[0], { responseDeleteRange: { revision: 7, deleted: 3, prevKvs: [] } });
  assert.deepStrictEqual(keysOf(s.range({ key: NUL, rangeEnd: NUL }).kvs), ['a', 'd']);
  assert.equal(s.checkValid(), undefined);
});

test('a from-key delete and a put of a deleted key in one txn: the put re-creates it at the same revision', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('0') }); // 2
  const r = s.txn({ success: [del('a', NUL), put('a', '1')] });
  assert.equal(r.revision, 3);
  assert.deepStrictEqual(get(s, 'a'), kv('a', '1', 3, 3, 1));
  assert.equal(get(s, 'a', 2)?.version, 1);
  assert.deepStrictEqual(
    s.eventsAt(3).map((e) => e.type),
    ['DELETE', 'PUT'],
  );
  // The tombstone (3,0) and the put (3,1) share a main revision: a valid etcd state.
  assert.equal(s.checkValid(), undefined);
});

test('a put then a from-key delete of the same key in one txn leaves it deleted', () => {
  const s = new MvccStore();
  const r = s.txn({ success: [put('a', '1'), { requestDeleteRange: { key: b('a'), rangeEnd: NUL, prevKv: true } }] });
  assert.equal(r.revision, 2);
  assert.equal(get(s, 'a'), undefined);
  // The delete's prev_kv sees the put made earlier in the same txn.
  assert.deepStrictEqual(r.responses[1], { responseDeleteRange: { revision: 2, deleted: 1, prevKvs: [kv('a', '1', 2, 2, 1)] } });
  assert.deepStrictEqual(s.eventsAt(2).map((e) => e.type), ['PUT', 'DELETE']);
  assert.equal(s.checkValid(), undefined);
});

test('ignore_value on a key deleted earlier in the same txn (from-key delete)', () => {
  const s = new MvccStore();
  s.put({ key: b('a'), value: b('0') }); // 2
  // etcd's checkPut passes (the key exists before the txn); the put then finds no key mid-txn, and etcd
  // panics ("unexpected error during txn with writes"). The simulator throws ErrKeyNotFound.
  // The simulator rolls the txn back and throws ErrKeyNotFound: a rejected request changes nothing.
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [del('a', NUL), { requestPut: { key: b('a'), ignoreValue: true } }] }));
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [del('a', NUL), { requestPut: { key: b('a'), ignoreLease: true } }] }));
});

test('too many operations: max(compare, success, failure) > 128', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  const puts = (n: number, prefix = 'k'): RequestOp[] => Array.from({ length: n }, (_, i) => put(`${prefix}${i}`));
  const compares = (n: number): Compare[] => Array.from({ length: n }, () => ({ key: b('a'), target: 'VERSION', result: 'GREATER', version: 0 }));
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ success: puts(129) }));
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ failure: puts(129) }));
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ compare: compares(129) }));
  assert.equal(s.txn({ compare: compares(128), success: puts(128), failure: puts(128) }).revision, 3);
  // Nested budget: 128 - opc of the parent.
  const outer = (nested: number): RequestOp[] => [...puts(99, 'o'), { requestTxn: { success: puts(nested, 'n') } }];
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ success: outer(29) }));
  assert.equal(s.txn({ success: outer(28) }).revision, 4);
  // The parent's widest list counts, whichever it is.
  assertUnchanged(s, ErrTooManyOps, () => s.txn({ compare: compares(100), success: [{ requestTxn: { success: puts(29, 'n') } }] }));
  // A custom limit.
  const small = new MvccStore({ maxTxnOps: 2 });
  assertUnchanged(small, ErrTooManyOps, () => small.txn({ success: puts(3) }));
  assert.equal(small.txn({ success: puts(2) }).revision, 2);
  assertUnchanged(small, ErrTooManyOps, () => small.txn({ success: [put('x'), { requestTxn: { success: puts(1) } }] }));
  assert.equal(small.txn({ success: [{ requestTxn: { success: puts(1, 'z') } }] }).revision, 3);
});

test('an empty RequestOp: ErrKeyNotFound; an empty compare key: ErrEmptyKey; ops are validated', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [put('x'), {}] }));
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ failure: [{}] }));
  assertUnchanged(s, ErrKeyNotFound, () => s.txn({ success: [{ requestTxn: { failure: [{}] } }] }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ compare: [{ key: new Uint8Array(0), target: 'VERSION', result: 'EQUAL' }], success: [put('x')] }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ success: [{ requestTxn: { compare: [{ key: new Uint8Array(0), target: 'MOD', result: 'EQUAL' }] } }] }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ success: [{ requestPut: { key: new Uint8Array(0) } }] }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ failure: [{ requestDeleteRange: { key: new Uint8Array(0) } }] }));
  assertUnchanged(s, ErrEmptyKey, () => s.txn({ success: [{ requestRange: { key: new Uint8Array(0) } }] }));
  assertUnchanged(s, ErrInvalidSortOption, () => s.txn({ success: [{ requestRange: { key: b('a'), sortOrder: 'UP' as SortOrder } }] }));
  assertUnchanged(s, ErrValueProvided, () => s.txn({ success: [put('x'), { requestPut: { key: b('a'), ignoreValue: true, value: b('v') } }] }));
});

test('a rolled-back txn restores lease attachments: the deleted key is attached to its lease again', () => {
  const lessor = new FakeLessor([7n, 9n]);
  const s = new MvccStore({ lessor });
  s.put({ key: b('a'), value: b('0'), lease: 7n }); // 2
  s.put({ key: b('b'), value: b('0'), lease: 7n }); // 3
  const attachedBefore = JSON.stringify([...lessor.attached].map(([id, keys]) => [String(id), [...keys].sort()]));
  expectError(
    () =>
      s.txn({
        success: [put('b', '1'), del('a', NUL), { requestPut: { key: b('a'), ignoreLease: true } }],
      }),
    ErrKeyNotFound,
  );
  assert.equal(s.currentRevision, 3);
  assert.deepStrictEqual(get(s, 'a'), kv('a', '0', 2, 2, 1, 7n));
  assert.deepStrictEqual(get(s, 'b'), kv('b', '0', 3, 3, 1, 7n));
  const attachedAfter = JSON.stringify([...lessor.attached].map(([id, keys]) => [String(id), [...keys].sort()]));
  assert.equal(attachedAfter, attachedBefore);
  assert.equal(s.checkValid(), undefined);
});

test('which check fails first: etcd 3.6+ checks txn ops in order, etcd 3.4 checks every put before any range', () => {
  const build = (s: MvccStore): void => {
    s.put({ key: b('x'), value: b('1') }); // 2
    s.put({ key: b('x'), value: b('2') }); // 3
    s.compact(3);
  };
  const txn = {
    success: [{ requestRange: { key: b('x'), revision: 2 } }, { requestPut: { key: b('missing'), ignoreLease: true } }],
  };
  const newer = new MvccStore();
  build(newer);
  assertUnchanged(newer, ErrCompacted, () => newer.txn(txn));
  const older = new MvccStore({ etcdVersion: '3.4' });
  build(older);
  assertUnchanged(older, ErrKeyNotFound, () => older.txn(txn));
});
