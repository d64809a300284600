// Bad input never corrupts: random well- and wrongly-typed calls through the engine, the services and the
// raw client. A simulator that also gets the junk stays equal to one that gets only the well-typed calls,
// every junk call fails with INVALID_ARGUMENT, a watcher sees each change once, and a third simulator in
// the same process never moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createEtcdSim, GrpcCode, utf8, type EtcdSim } from '../../src/index.js';
import { EtcdError, type EtcdVersion } from '../../src/etcd/index.js';
import { MvccStore } from '../../src/mvcc/kv.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../../src/mvcc/validate.js';
import type { Compare, CompareResult, CompareTarget, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, SortOrder, SortTarget, TxnRequest } from '../../src/mvcc/types.js';
import { checkAsyncProperty, checkProperty } from './harness.js';
import { raftRequestBytes } from './model/reference_proto.js';
import { referenceRefusal, referenceRevisionRefusal, type RequestKind } from './model/reference_validate.js';

const KEYS = ['a', 'b', 'c', 'd'];
const JUNK: readonly unknown[] = ['text', 42, -1.5, null, {}, [1, 2], true, 7n, { length: 4 }, { byteLength: 9000 }];

type Door = 'engine' | 'services' | 'client';
interface Call {
  readonly door: Door;
  readonly op: 'put' | 'delete' | 'txn' | 'range';
  readonly key: number;
  readonly value: number;
  /** Which field gets a junk value (undefined: a well-typed call). */
  readonly junkField: string | undefined;
  readonly junk: number;
}

const FIELDS: Readonly<Record<Call['op'], readonly string[]>> = {
  put: ['key', 'value', 'lease', 'prevKv', 'request'],
  delete: ['key', 'rangeEnd', 'prevKv', 'request'],
  txn: ['success', 'op', 'compare', 'nestedValue', 'request'],
  range: ['key', 'rangeEnd', 'limit', 'request'],
};

const callArb: fc.Arbitrary<Call> = fc
  .record({
    door: fc.constantFrom<Door>('engine', 'services', 'client'),
    op: fc.constantFrom<Call['op']>('put', 'delete', 'txn', 'range'),
    key: fc.nat({ max: KEYS.length - 1 }),
    value: fc.nat({ max: 5 }),
    junk: fc.nat({ max: JUNK.length - 1 }),
    junkAt: fc.option(fc.nat({ max: 4 }), { freq: 2 }),
  })
  .map(({ junkAt, ...c }) => ({ ...c, junkField: junkAt === null ? undefined : FIELDS[c.op][junkAt % FIELDS[c.op].length] }));

const engineFields: Readonly<Record<string, string>> = { prevKv: 'prevKv', rangeEnd: 'rangeEnd', key: 'key', value: 'value', lease: 'lease', limit: 'limit' };
const wireFields: Readonly<Record<string, string>> = { prevKv: 'prev_kv', rangeEnd: 'range_end', key: 'key', value: 'value', lease: 'lease', limit: 'limit' };

/** The request of `c` for `door`, with the junk in place when asked (`withJunk`). */
function request(c: Call, door: Door, withJunk: boolean): Record<string, unknown> | null {
  const junk = JUNK[c.junk];
  const bytes = (s: string): unknown => (door === 'engine' ? utf8(s) : door === 'services' ? Buffer.from(s) : s);
  const names = door === 'engine' ? engineFields : wireFields;
  const k = KEYS[c.key]!;
  let req: Record<string, unknown>;
  if (c.op === 'put') req = { key: bytes(k), value: bytes(`v${c.value}`) };
  else if (c.op === 'delete') req = { key: bytes(k) };
  else if (c.op === 'range') req = { key: bytes(k), [names['rangeEnd']!]: bytes('z') };
  else {
    const put = door === 'engine' ? { requestPut: { key: bytes(k), value: bytes(`t${c.value}`) } } : { request_put: { key: bytes(k), value: bytes(`t${c.value}`) } };
    const nested = door === 'engine' ? { requestTxn: { success: [put] } } : { request_txn: { success: [put] } };
    req = { success: [put, nested] };
  }
  if (!withJunk || c.junkField === undefined) return req;
  switch (c.junkField) {
    case 'request':
      return null;
    case 'success':
      return { ...req, success: junk };
    case 'op':
      return { ...req, success: [junk] };
    case 'compare':
      return { ...req, compare: [junk] };
    case 'nestedValue': {
      const put = door === 'engine' ? { requestPut: { key: bytes('n'), value: junk } } : { request_put: { key: bytes('n'), value: junk } };
      return { ...req, success: [...(req['success'] as unknown[]), door === 'engine' ? { requestTxn: { success: [put] } } : { request_txn: { success: [put] } }] };
    }
    default:
      return { ...req, [names[c.junkField]!]: junk };
  }
}

/**
 * Whether a junk value is one the API documents as converted rather than refused: a missing message is an
 * empty one on the wire forms; there, null is an absent field (protobufjs), a string in a bytes field is
 * base64 (services) or UTF-8 (raw client), and an int64 may be a number, bigint or decimal string. In the
 * engine, a limit is any safe integer and a lease any int64 bigint.
 */
function accepted(c: Call, door: Door): boolean {
  const junk = JUNK[c.junk];
  const f = c.junkField;
  if (f === 'prevKv' && typeof junk === 'boolean') return true;
  if (door === 'engine') {
    if (f === 'limit') return Number.isSafeInteger(junk);
    if (f === 'lease') return typeof junk === 'bigint';
    return false;
  }
  if (f === 'request' || junk === null) return true;
  if ((f === 'key' || f === 'value' || f === 'rangeEnd') && typeof junk === 'string') return true;
  if (f === 'limit' || f === 'lease') return typeof junk === 'bigint' || Number.isInteger(junk);
  return false;
}

async function call(sim: EtcdSim, c: Call, door: Door, withJunk: boolean): Promise<void> {
  const req = request(c, door, withJunk) as never;
  if (door === 'engine') {
    if (c.op === 'put') sim.mvcc.put(req);
    else if (c.op === 'delete') sim.mvcc.deleteRange(req);
    else if (c.op === 'range') sim.mvcc.range(req);
    else sim.mvcc.txn(req);
  } else if (door === 'services') {
    const kv = sim.services.kv;
    if (c.op === 'put') kv.put(req);
    else if (c.op === 'delete') kv.deleteRange(req);
    else if (c.op === 'range') kv.range(req);
    else kv.txn(req);
  } else {
    const kv = sim.client().kv;
    if (c.op === 'put') await kv.put(req);
    else if (c.op === 'delete') await kv.deleteRange(req);
    else if (c.op === 'range') await kv.range(req);
    else await kv.txn(req);
  }
}

const isInvalidArgument = (err: unknown): boolean => (err as { code?: unknown }).code === GrpcCode.INVALID_ARGUMENT;

test('junk-typed calls through every in-process door: refused with INVALID_ARGUMENT, nothing changes, nothing leaks', async () => {
  const bystander = createEtcdSim({ time: 'virtual' });
  for (const k of KEYS) bystander.mvcc.put({ key: utf8(k), value: utf8(`bystander ${k}`) });
  const bystanderHash = bystander.digest();
  await checkAsyncProperty(
    fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 40 }), async (calls) => {
      const subject = createEtcdSim({ time: 'virtual' });
      const reference = createEtcdSim({ time: 'virtual' });
      const watch = subject.watchStream();
      watch.watch({ key: utf8('\0'), rangeEnd: utf8('\0') });
      try {
        for (const c of calls) {
          const junky = c.junkField !== undefined && !accepted(c, c.door);
          let refused = false;
          try {
            await call(subject, c, c.door, true);
          } catch (err) {
            // Only etcd's (or etcd-shaped) errors: well-typed calls may fail as etcd fails them (a duplicate
            // key in a txn); a junk call fails with INVALID_ARGUMENT.
            assert.ok(typeof (err as { code?: unknown }).code === 'number', `not an etcd error: ${String(err)}`);
            if (junky) assert.ok(isInvalidArgument(err), `junk ${c.junkField} via ${c.door}: ${String(err)}`);
            refused = true;
          }
          if (junky) assert.ok(refused, `junk ${c.junkField}=${String(JUNK[c.junk])} via ${c.door} was accepted`);
          if (!refused) await call(reference, c, c.door, true).catch(() => undefined);
          assert.equal(subject.digest(), reference.digest(), `after ${JSON.stringify(c)}`);
          assert.equal(subject.mvcc.checkValid(), undefined);
        }
        const events = watch.take().flatMap((r) => r.events.map((e) => `${e.kv.modRevision}:${Buffer.from(e.kv.key).toString('latin1')}`));
        assert.equal(new Set(events).size, events.length, 'each change once');
        const revs = events.map((e) => Number(e.split(':')[0]));
        assert.deepEqual(revs, [...revs].sort((x, y) => x - y), 'in revision order');
        assert.deepEqual([...new Set(revs)], Array.from({ length: subject.mvcc.currentRevision - 1 }, (_, i) => i + 2), 'every revision');
        assert.equal(bystander.digest(), bystanderHash);
      } finally {
        subject.close();
        reference.close();
      }
    }),
    { file: 'test/properties/bad_input.property.test.ts', numRuns: 150 },
  );
  bystander.close();
});

// ---------------------------------------------------------------------------------------------------------
// Malformed requests, one check at a time: requests built to fail etcd's checks (empty keys, unknown sort
// options, ignore_value with a value, ignore_lease with a lease, ops with nothing set or two members, too many
// ops for --max-txn-ops at the top and in nested txns, keys put twice or inside a deleted range, writes one
// byte over --max-request-bytes) and, in a third of them, one field of the wrong JavaScript type anywhere in
// the tree. The store's own steps (validate, then the size of a write) must refuse exactly when the naive
// reference (test/properties/model/reference_validate.ts) does, with its text: the first check failed in
// etcd's order, or the field named by its path. Keys include "\0" and "a\0" (a put of "a" next to a delete
// of "a\0": the interval test's edges), a read-only txn gets a limit below its size too (it is never
// proposed, so never too large), and a txn's size step sometimes runs after another txn was validated (the
// store then walks it again). Each run checks 5–20 requests, so a run of the mutation tests (60 runs)
// still sees hundreds.

const k = (s: string): Uint8Array => utf8(s);
const keyArb = fc.oneof({ weight: 15, arbitrary: fc.constantFrom('a', 'b', 'c', 'd', 'a', 'b', '\0', 'a\0').map(k) }, { weight: 1, arbitrary: fc.constant(k('')) });
const endArb = fc.option(fc.constantFrom('', '\0', 'b', 'c', 'e', 'a\0').map(k), { nil: undefined, freq: 2 });
const flag = fc.option(fc.boolean(), { nil: undefined, freq: 2 });

const rangeArb: fc.Arbitrary<RangeRequest> = fc.record(
  {
    key: keyArb,
    rangeEnd: endArb,
    limit: fc.nat({ max: 3 }),
    sortOrder: fc.oneof({ weight: 10, arbitrary: fc.constantFrom<SortOrder>('NONE', 'ASCEND', 'DESCEND') }, { weight: 1, arbitrary: fc.constant('SIDEWAYS' as SortOrder) }),
    sortTarget: fc.oneof({ weight: 10, arbitrary: fc.constantFrom<SortTarget>('KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE') }, { weight: 1, arbitrary: fc.constant('COLOR' as SortTarget) }),
    keysOnly: flag,
  },
  { requiredKeys: ['key'] },
);
const putArb: fc.Arbitrary<PutRequest> = fc.record(
  {
    key: keyArb,
    value: fc.constantFrom('', 'v', 'value').map(k),
    lease: fc.constantFrom(0n, 7n),
    prevKv: flag,
    // ignore_* set in one put of six: with an empty value or a 0 lease it passes, with either set it is refused.
    ignoreValue: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.boolean() }),
    ignoreLease: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.boolean() }),
  },
  { requiredKeys: ['key'] },
);
const deleteArb: fc.Arbitrary<DeleteRangeRequest> = fc.record({ key: keyArb, rangeEnd: endArb, prevKv: flag }, { requiredKeys: ['key'] });
const compareArb: fc.Arbitrary<Compare> = fc.record({
  key: keyArb,
  rangeEnd: endArb,
  target: fc.constantFrom<CompareTarget>('VERSION', 'VALUE'),
  result: fc.constant<CompareResult>('EQUAL'),
  version: fc.constant(1),
});

const { txnArb: malformedTxnArb } = fc.letrec<{ txnArb: TxnRequest; opArb: RequestOp }>((tie) => ({
  opArb: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 6, arbitrary: fc.record({ requestRange: rangeArb }) },
    { weight: 8, arbitrary: fc.record({ requestPut: putArb }) },
    { weight: 4, arbitrary: fc.record({ requestDeleteRange: deleteArb }) },
    { weight: 4, arbitrary: fc.record({ requestTxn: tie('txnArb') as fc.Arbitrary<TxnRequest> }) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: fc.record({ requestRange: rangeArb, requestPut: putArb }) },
    { weight: 1, arbitrary: fc.record({ requestPut: putArb, requestDeleteRange: deleteArb }) },
    { weight: 1, arbitrary: fc.record({ requestDeleteRange: deleteArb, requestTxn: tie('txnArb') as fc.Arbitrary<TxnRequest> }) },
  ),
  txnArb: fc.record(
    {
      compare: fc.array(compareArb, { maxLength: 4 }),
      success: fc.array(tie('opArb') as fc.Arbitrary<RequestOp>, { maxLength: 4 }),
      failure: fc.array(tie('opArb') as fc.Arbitrary<RequestOp>, { maxLength: 4 }),
    },
    { requiredKeys: [] },
  ),
}));

/** Where a wrong-typed value can go: a field of some message in the tree, the kind of value it takes. */
interface Site {
  readonly kind: 'bytes' | 'bytes?' | 'int' | 'int64' | 'bool' | 'list' | 'message';
  readonly set: (v: unknown) => void;
}

const FIELD_KINDS: Readonly<Record<string, Readonly<Record<string, Site['kind']>>>> = {
  range: { key: 'bytes', rangeEnd: 'bytes?', limit: 'int', revision: 'int', minModRevision: 'int', maxModRevision: 'int', minCreateRevision: 'int', maxCreateRevision: 'int', serializable: 'bool', keysOnly: 'bool', countOnly: 'bool' },
  put: { key: 'bytes', value: 'bytes?', lease: 'int64', prevKv: 'bool', ignoreValue: 'bool', ignoreLease: 'bool' },
  delete: { key: 'bytes', rangeEnd: 'bytes?', prevKv: 'bool' },
  compare: { key: 'bytes', rangeEnd: 'bytes?', version: 'int', createRevision: 'int', modRevision: 'int', value: 'bytes?', lease: 'int64' },
};

type Mutable = Record<string, unknown>;

function messageSites(kind: string, m: Mutable, sites: Site[]): void {
  for (const [name, fieldKind] of Object.entries(FIELD_KINDS[kind]!)) sites.push({ kind: fieldKind, set: (v) => (m[name] = v) });
}

function txnSites(t: Mutable, sites: Site[]): void {
  for (const name of ['compare', 'success', 'failure']) {
    sites.push({ kind: 'list', set: (v) => (t[name] = v) });
    const l = t[name] as Mutable[] | undefined;
    l?.forEach((x, i) => {
      sites.push({ kind: 'message', set: (v) => (l[i] = v as Mutable) });
      if (name === 'compare') return messageSites('compare', x, sites);
      const members: [string, string][] = [['requestRange', 'range'], ['requestPut', 'put'], ['requestDeleteRange', 'delete']];
      for (const [m, kind] of members) {
        if (x[m] === undefined) continue;
        sites.push({ kind: 'message', set: (v) => (x[m] = v) });
        messageSites(kind, x[m] as Mutable, sites);
      }
      if (x['requestTxn'] !== undefined) {
        sites.push({ kind: 'message', set: (v) => (x['requestTxn'] = v) });
        txnSites(x['requestTxn'] as Mutable, sites);
      }
    });
  }
}

/** Values of the wrong type for each kind of field ('bytes' is a required key: undefined is wrong there too). */
const WRONG: Readonly<Record<Site['kind'], readonly unknown[]>> = {
  // Object.create(Object.create(null)): an object whose prototype has no constructor.
  bytes: [undefined, 'k', 'a string longer than twenty characters', 5, null, [1], {}, Object.create(null), Object.create(Object.create(null)), 7n, true, new Uint16Array(2), new DataView(new ArrayBuffer(2))],
  'bytes?': ['k', 'a string longer than twenty characters', 0, null, [], { length: 1 }, 1n, false, new Int8Array(1)],
  int: [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, -(2 ** 53), '5', 5n, null, true],
  int64: [5, 0, 2n ** 63n, -(2n ** 63n) - 1n, '1', null],
  bool: [1, 0, 'true', null],
  list: [{}, 'x', 5, null, new Uint8Array(1)],
  message: [null, undefined, [], new Uint8Array(1), 5, 'x', new DataView(new ArrayBuffer(1)), 'twenty characters!!!'],
};

/** A revision argument (Compact, Hash, HashKV) of the wrong type, or 0 (a valid one for Hash and HashKV). */
type RevisionCall = { readonly kind: 'revision'; readonly method: 'compact' | 'hash' | 'hashKV'; readonly req: unknown };
type Malformed = { readonly kind: RequestKind; readonly req: unknown } | RevisionCall;


const REVISION_FIELD: Readonly<Record<RevisionCall['method'], string>> = { compact: 'compact revision', hash: 'hash revision', hashKV: 'hashKV revision' };

const revisionArb: fc.Arbitrary<RevisionCall> = fc
  .tuple(fc.constantFrom<RevisionCall['method']>('compact', 'hash', 'hashKV'), fc.constantFrom(0, ...WRONG.int))
  .map(([method, req]) => ({ kind: 'revision', method: method === 'compact' && req === 0 ? 'hash' : method, req }));

/**
 * Txns that only read, some through nested txns: etcd's isTxnReadonly does not look into a nested txn, so
 * such a txn is proposed like a write and --max-request-bytes applies (the engine served it as a read until
 * this property).
 */
const readsArb: fc.Arbitrary<TxnRequest> = fc.record({
  success: fc.array(fc.oneof(fc.record({ requestRange: rangeArb }), fc.record({ requestTxn: fc.record({ success: fc.array(fc.record({ requestRange: rangeArb }), { maxLength: 2 }) }) })), { minLength: 1, maxLength: 3 }),
});

/**
 * Txns of well-formed puts, deletes and nested txns of them only, on keys that sit at each other's edges ("a",
 * "a\0", "\0", "b", "c"): mostly within --max-txn-ops, so what decides is checkIntervals (a key put twice in a
 * branch, in a nested txn's then and else, next to or inside a deleted range, an end of "" or "\0").
 */
const edgeKeyArb = fc.constantFrom('a', 'a\0', '\0', 'b', 'c').map(k);
const { txn: intervalsArb } = fc.letrec<{ txn: TxnRequest; op: RequestOp }>((tie) => ({
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: fc.record({ requestPut: fc.record({ key: edgeKeyArb, value: fc.constant(k('v')) }) }) },
    { weight: 2, arbitrary: fc.record({ requestDeleteRange: fc.record({ key: edgeKeyArb, rangeEnd: endArb }, { requiredKeys: ['key'] }) }) },
    { weight: 2, arbitrary: fc.record({ requestTxn: tie('txn') as fc.Arbitrary<TxnRequest> }) },
    // A nested txn whose then and else each put a key (the same one in a fifth of them: allowed, only one runs).
    { weight: 2, arbitrary: fc.tuple(edgeKeyArb, edgeKeyArb).map(([a, b]) => ({ requestTxn: { success: [{ requestPut: { key: a, value: k('t') } }], failure: [{ requestPut: { key: b, value: k('e') } }] } })) },
  ),
  txn: fc.record({
    success: fc.oneof(
      fc.array(tie('op') as fc.Arbitrary<RequestOp>, { maxLength: 3 }),
      // Puts alone (no delete, no nested txn): a key put twice is all that can collide.
      fc.array(edgeKeyArb.map((key): RequestOp => ({ requestPut: { key, value: k('p') } })), { minLength: 2, maxLength: 3 }),
      // Two nested txns, the second's else putting a key the first put (refused unless its then puts it too).
      fc.tuple(edgeKeyArb, edgeKeyArb).map(([x, y]): RequestOp[] => [
        { requestTxn: { success: [{ requestPut: { key: x, value: k('1') } }] } },
        { requestTxn: { success: [{ requestPut: { key: y, value: k('2') } }], failure: [{ requestPut: { key: x, value: k('3') } }] } },
      ]),
      // A put of a key beside a delete of the key one byte past it (or of the key itself): [k+"\0", k+"\0\0") holds no k.
      // The delete's range_end absent or empty, which etcd reads alike: the one key, not [key, "") that holds nothing.
      fc.tuple(fc.constantFrom('a\0', 'a'), fc.boolean(), fc.boolean()).map(([del, first, emptyEnd]): RequestOp[] => {
        const ops: RequestOp[] = [{ requestDeleteRange: emptyEnd ? { key: k(del), rangeEnd: k('') } : { key: k(del) } }, { requestPut: { key: k('a'), value: k('p') } }];
        return first ? ops : ops.reverse();
      }),
    ),
    failure: fc.array(tie('op') as fc.Arbitrary<RequestOp>, { maxLength: 2 }),
  }),
}));

/**
 * An op with a request and a nested txn (no protobuf decoder makes one; a JavaScript caller can): etcd's checks
 * take the request, but the txn's shape is checked too, here with a value of the wrong type in one case of two.
 */
const twoMembersArb: fc.Arbitrary<TxnRequest> = fc
  .tuple(fc.constantFrom('requestRange', 'requestPut', 'requestDeleteRange'), fc.constantFrom<unknown>(k('v'), ...WRONG['bytes?']))
  .map(([member, value]) => ({ success: [{ [member]: { key: k('a') }, requestTxn: { success: [{ requestPut: { key: k('n'), value } }] } } as RequestOp] }));

const malformedArb: fc.Arbitrary<{ readonly kind: RequestKind; readonly req: unknown }> = fc
  .tuple(
    fc.oneof(
      rangeArb.map((r) => ({ kind: 'range' as const, req: r })),
      { weight: 2, arbitrary: putArb.map((r) => ({ kind: 'put' as const, req: r })) },
      deleteArb.map((r) => ({ kind: 'delete' as const, req: r })),
      { weight: 4, arbitrary: malformedTxnArb.map((r) => ({ kind: 'txn' as const, req: r })) },
      { weight: 3, arbitrary: readsArb.map((r) => ({ kind: 'txn' as const, req: r })) },
      { weight: 4, arbitrary: intervalsArb.map((r) => ({ kind: 'txn' as const, req: r })) },
      { weight: 1, arbitrary: twoMembersArb.map((r) => ({ kind: 'txn' as const, req: r })) },
    ),
    fc.option(fc.tuple(fc.nat(), fc.nat()), { freq: 2 }),
  )
  .map(([{ kind, req }, junk]) => {
    if (junk === null) return { kind, req };
    const copy = structuredClone(req) as Mutable;
    const sites: Site[] = [{ kind: 'message', set: () => undefined }];
    if (kind === 'txn') txnSites(copy, sites);
    else messageSites(kind, copy, sites);
    const site = sites[junk[0] % sites.length]!;
    const wrong = WRONG[site.kind][junk[1] % WRONG[site.kind].length];
    if (site === sites[0]) return { kind, req: wrong };
    site.set(wrong);
    return { kind, req: copy };
  });

/** A txn validated between a txn's validation and its size step (a server's requests interleave there). */
const OTHER_TXN: TxnRequest = { success: [{ requestPut: { key: k('x'), value: k('y') } }] };

/**
 * The store's steps on `m`: its refusal's text, or undefined when it passes validation and (a write) the size.
 * `interleave`: another txn is validated before a txn's size step, so the store cannot reuse what it learnt.
 */
function storeRefusal(store: MvccStore, m: Malformed, interleave: boolean): string | undefined {
  try {
    if (m.kind === 'revision') store[m.method](m.req as number);
    else if (m.kind === 'range') store.validateRange(m.req as RangeRequest);
    else if (m.kind === 'put') store.checkPutSize(store.validatePut(m.req as PutRequest));
    else if (m.kind === 'delete') store.checkDeleteRangeSize(store.validateDeleteRange(m.req as DeleteRangeRequest));
    else {
      const v = store.validateTxn(m.req as TxnRequest);
      if (interleave) store.validateTxn(OTHER_TXN);
      if (store.readOnlyTxn(v) === undefined) store.checkTxnSize(v);
    }
    return undefined;
  } catch (err) {
    assert.ok(err instanceof EtcdError, `not an etcd error: ${String(err)}`);
    assert.equal(err.code, GrpcCode.INVALID_ARGUMENT, err.message);
    return err.message;
  }
}

/**
 * A delete without its key, alone and in a txn, checked in every run: drawn, it is one wrong value of 13 at one of
 * a delete's four sites, and a measured seed drew none (issue #35: shape.ts's required delete key, taken as
 * optional, let etcd's key check read the length of undefined).
 */
const KEYLESS: readonly Malformed[] = [
  { kind: 'delete', req: { rangeEnd: k('b') } },
  { kind: 'txn', req: { success: [{ requestDeleteRange: { prevKv: true } }] } },
];

test('malformed requests are refused as etcd refuses them, by the first check in etcd order', () => {
  const caseArb = fc.record({
    m: fc.oneof({ weight: 12, arbitrary: malformedArb }, { weight: 1, arbitrary: revisionArb }),
    release: fc.constantFrom<EtcdVersion>('3.4', '3.7'),
    // Mostly small, so the budget is met at the top and in nested txns; etcd's default in one case of four.
    maxTxnOps: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 5 }) }, { weight: 1, arbitrary: fc.constant(128) }),
    sizeDelta: fc.constantFrom(undefined, -1, 0),
    interleave: fc.boolean(),
  });
  checkProperty(
    fc.property(fc.array(caseArb, { minLength: 5, maxLength: 20 }), (cases) => {
      const keyless = KEYLESS.map((m) => ({ m, release: cases[0]!.release, maxTxnOps: 5, sizeDelta: undefined, interleave: false }));
      for (const { m, release, maxTxnOps, sizeDelta, interleave } of [...cases, ...keyless]) {
        const limits = { maxTxnOps, maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES, sortOrderChecked: release !== '3.4' };
        let maxRequestBytes = DEFAULT_MAX_REQUEST_BYTES;
        let want: string | undefined;
        if (m.kind === 'revision') want = referenceRevisionRefusal(REVISION_FIELD[m.method], m.req);
        else {
          want = referenceRefusal(m.kind, m.req, limits);
          // A write (or a txn that only reads) that passes the checks: put the limit at its proposal's size, or one byte below it.
          if (want === undefined && sizeDelta !== undefined && m.kind !== 'range') {
            const body = m.kind === 'put' ? { put: m.req as PutRequest } : m.kind === 'delete' ? { deleteRange: m.req as DeleteRangeRequest } : { txn: m.req as TxnRequest };
            maxRequestBytes = raftRequestBytes(body) + sizeDelta;
            want = referenceRefusal(m.kind, m.req, { ...limits, maxRequestBytes });
          }
        }
        const store = new MvccStore({ maxTxnOps, maxRequestBytes, etcdVersion: release });
        assert.equal(storeRefusal(store, m, interleave), want, `${m.kind} on ${release}, --max-txn-ops ${maxTxnOps}, --max-request-bytes ${maxRequestBytes}${interleave ? ', another txn validated before the size step' : ''}`);
      }
    }),
    { file: 'test/properties/bad_input.property.test.ts', numRuns: 300 },
  );
});
