// Validation once: KVService takes each request through the MvccStore's steps one by one (validate → token →
// size → permissions → apply), never through the engine's all-in-one put/range/txn/deleteRange, which would
// validate it again — or, for a get of one key's current revision on a member checking no token, through the
// one pass that makes only the checks such a get can fail (tryPlainRange); and the server and the engine
// refuse the same inputs with the same errors.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { inspect } from 'node:util';
import { EtcdServer, type CallContext } from '../../src/server/index.js';
import type { messages as M } from '../../src/index.js';
import { deleteRangeIn, putIn, rangeIn, txnIn } from '../../src/server/convert.js';
import { type MvccStore } from '../../src/mvcc/index.js';
import { EtcdError, type EtcdVersion } from '../../src/etcd/index.js';
import { ErrInvalidAuthToken, ErrPermissionDenied } from '../../src/auth/errors.js';
import { ErrEmptyKey, ErrRequestTooLarge } from '../../src/mvcc/errors.js';

const b = (s: string): Buffer => Buffer.from(s);
const VERSIONS: readonly EtcdVersion[] = ['3.4', '3.5', '3.6', '3.7'];

/** A member with root and a user `u` who may read and write only under "u/"; auth on or off. */
function member(etcdVersion: EtcdVersion, authOn: boolean, limits: { maxRequestBytes?: number; maxTxnOps?: number } = {}): { s: EtcdServer; root: CallContext; u: CallContext } {
  const s = new EtcdServer({
    etcdVersion,
    ...limits,
    auth: {
      roles: [{ name: 'r', permissions: [{ permType: 'READWRITE', key: 'u/', rangeEnd: 'u0' }] }],
      users: [
        { name: 'root', password: 'rootpw', roles: ['root'] },
        { name: 'u', password: 'p', roles: ['r'] },
      ],
      enable: true,
    },
  });
  const a = s.services.auth;
  const root = { token: a.authenticate({ name: 'root', password: 'rootpw' }).token };
  const u = { token: a.authenticate({ name: 'u', password: 'p' }).token };
  if (!authOn) a.authDisable({}, root);
  return { s, root: authOn ? root : {}, u };
}

const STEPS = [
  'validateRange',
  'validatePut',
  'validateDeleteRange',
  'validateTxn',
  'checkPutSize',
  'checkDeleteRangeSize',
  'checkTxnSize',
  'applyRange',
  'applyPut',
  'applyDeleteRange',
  'applyTxn',
  'range',
  'put',
  'deleteRange',
  'txn',
  'tryPlainRange',
] as const;
type Step = (typeof STEPS)[number];

/** Spies on every step of the store; returns a function giving the steps run since the last call. */
function spy(t: TestContext, mvcc: MvccStore): () => Partial<Record<Step, number>> {
  const mocks = STEPS.map((name) => [name, t.mock.method(mvcc, name)] as const);
  return () => {
    const out: Partial<Record<Step, number>> = {};
    for (const [name, m] of mocks) {
      if (m.mock.callCount() > 0) out[name] = m.mock.callCount();
      m.mock.resetCalls();
    }
    return out;
  };
}

test('each KV call is validated, sized and applied exactly once, auth on or off, on every version profile', (t) => {
  for (const v of VERSIONS) {
    for (const authOn of [false, true]) {
      const { s, root } = member(v, authOn);
      const kv = s.services.kv;
      const steps = spy(t, s.mvcc);
      const at = `${v}, auth ${authOn ? 'on' : 'off'}`;
      kv.put({ key: b('k'), value: b('v') }, root);
      assert.deepEqual(steps(), { validatePut: 1, checkPutSize: 1, applyPut: 1 }, at);
      // Without tokens to check (auth off; 3.4 checks them even then) a plain get takes the one pass.
      const onePass = !authOn && v !== '3.4';
      kv.put({ key: b('k'), value: b('v'), prev_kv: true }, root);
      assert.deepEqual(steps(), { validatePut: 1, checkPutSize: 1, applyPut: 1 }, at);
      kv.range({ key: b('k') }, root);
      assert.deepEqual(steps(), onePass ? { tryPlainRange: 1 } : { validateRange: 1, applyRange: 1 }, at);
      kv.range({ key: b('k'), keys_only: true }, root);
      assert.deepEqual(steps(), { validateRange: 1, applyRange: 1 }, at);
      kv.deleteRange({ key: b('k') }, root);
      assert.deepEqual(steps(), { validateDeleteRange: 1, checkDeleteRangeSize: 1, applyDeleteRange: 1 }, at);
      kv.txn({ success: [{ request_put: { key: b('k'), value: b('v') } }, { request_txn: { success: [{ request_range: { key: b('k') } }] } }] }, root);
      assert.deepEqual(steps(), { validateTxn: 1, checkTxnSize: 1, applyTxn: 1 }, at);
      // A read-only txn is served like a Range: never proposed, so never sized.
      kv.txn({ compare: [{ key: b('k'), target: 'VERSION', result: 'EQUAL', version: '1' }], failure: [{ request_range: { key: b('k') } }] }, root);
      assert.deepEqual(steps(), { validateTxn: 1, applyTxn: 1 }, at);
      // A request refused by validation goes no further (a plain one is declined by the one pass first).
      assert.throws(() => kv.put({ key: b('') }, root));
      assert.deepEqual(steps(), { validatePut: 1 }, at);
      assert.throws(() => kv.range({ key: b('') }, root));
      assert.deepEqual(steps(), onePass ? { tryPlainRange: 1, validateRange: 1 } : { validateRange: 1 }, at);
      // The engine's own API runs the same steps, each once, behind its public methods.
      s.mvcc.put({ key: b('k'), value: b('v') });
      assert.deepEqual(steps(), { put: 1, validatePut: 1, checkPutSize: 1, applyPut: 1 }, at);
      s.mvcc.txn({ success: [{ requestRange: { key: b('k') } }] });
      assert.deepEqual(steps(), { txn: 1, validateTxn: 1, applyTxn: 1 }, at);
    }
  }
});

/** Puts and gets in every form a client or a gRPC decoder (defaults filled in) sends; the gets one-pass or not. */
const PLAIN_OR_NOT: ReadonlyArray<{ put: M.PutRequest } | { range: M.RangeRequest }> = [
  { put: { key: b('a'), value: b('1') } },
  { put: { key: b('c') } },
  { put: { key: b('a'), value: b('2'), lease: '0', prev_kv: false, ignore_value: false, ignore_lease: false } },
  { put: { key: b('a'), value: b('3'), lease: 0n } },
  { put: { key: b('a'), value: b('4'), prev_kv: true } },
  { put: { key: b('a'), value: 'NQ==' as unknown as Uint8Array } }, // base64 text (protobufjs takes it): converted by the steps
  { range: { key: b('a') } },
  { range: { key: b('a'), limit: 1 } },
  { range: { key: b('a'), limit: '1' } },
  { range: { key: b('a'), limit: -3 } },
  { range: { key: b('missing'), limit: 1 } },
  {
    range: {
      key: b('a'),
      range_end: Buffer.alloc(0),
      limit: '0',
      revision: '0',
      sort_order: 'NONE',
      sort_target: 'KEY',
      serializable: true,
      keys_only: false,
      count_only: false,
      min_mod_revision: '0',
      max_mod_revision: '0',
      min_create_revision: '0',
      max_create_revision: '0',
    },
  },
  { range: { key: b('a'), sort_order: 0, sort_target: 0, serializable: false } },
  { range: { key: b('a'), revision: '3' } },
  { range: { key: b('a'), keys_only: true } },
  { range: { key: b('a'), count_only: true } },
  { range: { key: b('a'), max_mod_revision: '2' } },
  { range: { key: b('a'), sort_order: 'DESCEND' } },
  { range: { key: b('a'), range_end: b('z') } },
];

test('a get taken in one pass answers what the steps answer, and puts beside it leave the same store', (t) => {
  const onePass = member('3.7', false);
  const steps = member('3.7', true); // root's token: every request takes the steps
  const spied = spy(t, onePass.s.mvcc);
  let passes = 0;
  for (const c of PLAIN_OR_NOT) {
    const answer = (m: ReturnType<typeof member>): unknown => ('put' in c ? m.s.services.kv.put(c.put, m.root) : m.s.services.kv.range(c.range, m.root));
    assert.deepStrictEqual(answer(onePass), answer(steps), inspect(c));
    const ran = spied();
    passes += ran.tryPlainRange ?? 0;
  }
  assert.equal(passes, 7, 'the one pass took the seven plain gets');
  assert.equal(onePass.s.mvcc.hash(), steps.s.mvcc.hash());
});

/** Requests that fail, in message form: validation, size and apply-time errors alike. */
const BAD: ReadonlyArray<{ readonly name: string } & ({ range: M.RangeRequest } | { put: M.PutRequest } | { del: M.DeleteRangeRequest } | { txn: M.TxnRequest })> = [
  { name: 'range: empty key', range: { key: b('') } },
  { name: 'range: unknown sort_target', range: { key: b('k'), sort_target: 9 } },
  { name: 'range: unknown sort_order (3.5+; 3.4 serves it)', range: { key: b('k'), sort_order: 7 } },
  { name: 'range: future revision', range: { key: b('k'), revision: '99' } },
  { name: 'put: empty key', put: { key: b(''), value: b('v') } },
  { name: 'put: ignore_value with a value', put: { key: b('k'), value: b('v'), ignore_value: true } },
  { name: 'put: ignore_lease with a lease', put: { key: b('k'), lease: '5', ignore_lease: true } },
  { name: 'put: too large', put: { key: b('k'), value: Buffer.alloc(1700) } },
  { name: 'put: unknown lease', put: { key: b('k'), lease: '5' } },
  { name: 'put: ignore_value on a missing key', put: { key: b('missing'), ignore_value: true } },
  { name: 'delete: empty key', del: { key: b('') } },
  { name: 'delete: too large', del: { key: Buffer.alloc(1700, 'k') } },
  { name: 'txn: too many ops', txn: { success: Array.from({ length: 4 }, (_, i) => ({ request_range: { key: b(`k${i}`) } })) } },
  { name: 'txn: compare without a key', txn: { compare: [{ key: b(''), target: 'VERSION', result: 'EQUAL', version: '0' }] } },
  { name: 'txn: an op with nothing set', txn: { success: [{}] } },
  { name: 'txn: duplicate key', txn: { success: [{ request_put: { key: b('k') } }, { request_put: { key: b('k') } }] } },
  {
    name: 'txn: nested duplicate key',
    txn: { success: [{ request_put: { key: b('k') } }, { request_txn: { failure: [{ request_put: { key: b('k') } }] } }] },
  },
  { name: 'txn: put inside a deleted range', txn: { failure: [{ request_delete_range: { key: b('a'), range_end: b('z') } }, { request_put: { key: b('k') } }] } },
  { name: 'txn: a write too large', txn: { success: [{ request_put: { key: b('k'), value: Buffer.alloc(1700) } }] } },
  { name: 'txn: a nested range of a future revision', txn: { success: [{ request_txn: { success: [{ request_range: { key: b('k'), revision: '99' } }] } }] } },
  { name: 'txn: put with an unknown lease', txn: { success: [{ request_put: { key: b('k'), lease: '5' } }] } },
];

/** What the engine answers to the same request (converted as the server converts it). */
function engineError(mvcc: MvccStore, c: (typeof BAD)[number]): EtcdError | undefined {
  try {
    if ('range' in c) mvcc.range(rangeIn(c.range));
    else if ('put' in c) mvcc.put(putIn(c.put));
    else if ('del' in c) mvcc.deleteRange(deleteRangeIn(c.del));
    else mvcc.txn(txnIn(c.txn));
  } catch (err) {
    assert.ok(err instanceof EtcdError, `${c.name}: ${String(err)}`);
    return err;
  }
  return undefined;
}

test('the server and the engine refuse the same requests with the same errors, and a refusal changes nothing', () => {
  for (const v of VERSIONS) {
    for (const authOn of [false, true]) {
      // Small limits so that the cases stay small (the same on both sides).
      const limits = { maxRequestBytes: 1024 + 64, maxTxnOps: 3 };
      const server = member(v, authOn, limits);
      const engine = member(v, authOn, limits).s.mvcc;
      for (const side of [server.s.mvcc, engine]) side.put({ key: b('k'), value: b('v') });
      for (const c of BAD) {
        const at = `${v}, auth ${authOn ? 'on' : 'off'}: ${c.name}`;
        const want = engineError(engine, c);
        const before = server.s.mvcc.hash();
        const beforeRev = server.s.mvcc.currentRevision;
        let got: (Error & { code?: number; details?: string }) | undefined;
        try {
          const kv = server.s.services.kv;
          if ('range' in c) kv.range(c.range, server.root);
          else if ('put' in c) kv.put(c.put, server.root);
          else if ('del' in c) kv.deleteRange(c.del, server.root);
          else kv.txn(c.txn, server.root);
        } catch (err) {
          got = err as Error & { code?: number; details?: string };
        }
        if (want === undefined) {
          assert.equal(got, undefined, at);
          continue;
        }
        assert.ok(got !== undefined, `${at}: the engine refused it (${want.message}), the server did not`);
        assert.equal(got.details, want.message, at);
        assert.equal(got.code, want.code, at);
        assert.equal(server.s.mvcc.hash(), before, at);
        assert.equal(server.s.mvcc.currentRevision, beforeRev, at);
      }
    }
  }
});

test('the order is etcd\'s: validation, then the token, then the size, then permissions', () => {
  for (const v of VERSIONS) {
    const { s, u } = member(v, true, { maxRequestBytes: 1024 + 64 });
    const kv = s.services.kv;
    const stale = { token: 'stale.1' };
    const big = Buffer.alloc(1700);
    const refuses = (fn: () => unknown, message: string, at: string): void => {
      assert.throws(fn, (err: Error & { details?: string }) => err.details === message, `${v}: ${at}`);
    };
    refuses(() => kv.put({ key: b('') }, stale), ErrEmptyKey.message, 'an invalid request with a stale token');
    refuses(() => kv.txn({ success: [{ request_put: { key: b('x') } }, { request_put: { key: b('x') } }] }, stale), 'etcdserver: duplicate key given in txn request', 'a duplicate key with a stale token');
    refuses(() => kv.put({ key: b('x'), value: big }, stale), ErrInvalidAuthToken.message, 'an oversized put with a stale token');
    refuses(() => kv.put({ key: b('x'), value: big }, u), ErrRequestTooLarge.message, 'an oversized put the user may not make');
    refuses(() => kv.put({ key: b('x') }, u), ErrPermissionDenied.message, 'a put the user may not make');
    refuses(() => kv.txn({ success: [{ request_range: { key: b('x'), range_end: Buffer.alloc(1700, 'y') } }] }, u), ErrPermissionDenied.message, 'an oversized read: no size limit');
  }
});

test('a read-only txn is not proposed, so no size limit applies to it (etcd 3.4.23: a 1.6 MB compare or range key is served)', () => {
  const big = Buffer.alloc(1_600_000, 'k');
  for (const v of VERSIONS) {
    for (const authOn of [false, true]) {
      const { s, root } = member(v, authOn);
      const kv = s.services.kv;
      const at = `${v}, auth ${authOn ? 'on' : 'off'}`;
      const compare: M.Compare = { key: b('a'), target: 'VALUE', result: 'EQUAL', value: big };
      assert.equal(kv.txn({ compare: [compare] }, root).succeeded, false, at);
      const op = kv.txn({ success: [{ request_range: { key: big } }] }, root).responses[0];
      assert.ok(op !== undefined && op.response === 'response_range' && op.response_range.kvs.length === 0, at);
      const rev = s.mvcc.currentRevision;
      assert.throws(() => kv.txn({ compare: [compare], failure: [{ request_put: { key: b('a') } }] }, root), { details: ErrRequestTooLarge.message });
      assert.equal(s.mvcc.currentRevision, rev, at);
      // The engine's own Txn says the same.
      assert.equal(s.mvcc.txn({ compare: [{ key: b('a'), target: 'VALUE', result: 'EQUAL', value: big }] }).succeeded, false, at);
      assert.throws(() => s.mvcc.txn({ failure: [{ requestPut: { key: big } }] }), { message: ErrRequestTooLarge.message });
    }
  }
});

test('types: the store applies only what was validated, and a write only once it was sized', () => {
  const m = new EtcdServer().mvcc;
  // Type checks only (tsc runs over the tests): each line would compile without the step it skips.
  const unchecked = (): void => {
    // @ts-expect-error: a request that was not validated
    m.applyPut({ key: b('k') });
    // @ts-expect-error: a validated write that was not sized
    m.applyPut(m.validatePut({ key: b('k') }));
    // @ts-expect-error: a validated txn that may write must be sized, or shown to be read-only
    m.applyTxn(m.validateTxn({}));
    // @ts-expect-error: a Range is validated before it is served
    m.applyRange({ key: b('k') });
  };
  assert.equal(typeof unchecked, 'function');
  // The steps return the request itself: marking it validated allocates nothing.
  const r = { key: b('k'), value: b('v') };
  assert.equal(m.checkPutSize(m.validatePut(r)), r);
  const ro = { success: [{ requestRange: { key: b('k') } }] };
  assert.equal(m.readOnlyTxn(m.validateTxn(ro)), ro);
  assert.equal(m.readOnlyTxn(m.validateTxn({ success: [{ requestPut: { key: b('k') } }] })), undefined);
});
