/**
 * Property: for random permission sets and random KV requests, a request succeeds exactly when the
 * permission model allows it, and a denied request leaves the store unchanged (hash and revision).
 * The oracle is written independently of src/auth: it merges the granted intervals into disjoint
 * segments and asks whether one segment holds the requested interval, and lists the needs of each
 * request the way etcd's apply/auth.go does (Txn: every compare and both branches, prev_kv also READ).
 * Runs: ETCDSIM_NUM_RUNS (default 200). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path>.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { EtcdServer, type CallContext } from '../../src/server/index.js';
import type * as M from '../../src/server/messages.js';
import { parameters } from '../properties/harness.js';

type Kind = 'READ' | 'WRITE';
type PermType = 'READ' | 'WRITE' | 'READWRITE';
/** A key interval as strings; end null = +∞. */
interface Ivl {
  begin: string;
  end: string | null;
}
interface Perm {
  permType: PermType;
  key: string;
  rangeEnd: string; // '' single key, '\0' open-ended
}

const KEYS = ['a', 'b', 'c', 'ab', 'b\0', 'ba', 'bb'];
const keyArb = fc.constantFrom(...KEYS);
/** A range end for `key`: none, open-ended, or a key above it. */
const endFor = (key: string): fc.Arbitrary<string> => fc.constantFrom('', '\0', ...[...KEYS, 'c\0', 'd'].filter((k) => k > key));

const permArb: fc.Arbitrary<Perm> = keyArb.chain((key) =>
  fc.record({ permType: fc.constantFrom<PermType>('READ', 'WRITE', 'READWRITE'), key: fc.constant(key), rangeEnd: endFor(key) }),
);

interface Rng {
  key: string;
  end: string;
}
const rngArb: fc.Arbitrary<Rng> = keyArb.chain((key) => fc.record({ key: fc.constant(key), end: endFor(key) }));

type Op =
  | { t: 'range'; r: Rng }
  | { t: 'put'; key: string; prevKv: boolean }
  | { t: 'del'; r: Rng; prevKv: boolean }
  | { t: 'txn'; cmp: Rng[]; success: Op[]; failure: Op[] };

const opArb: fc.Arbitrary<Op> = fc.letrec<{ op: Op }>((tie) => ({
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ t: fc.constant('range' as const), r: rngArb }),
    fc.record({ t: fc.constant('put' as const), key: keyArb, prevKv: fc.boolean() }),
    fc.record({ t: fc.constant('del' as const), r: rngArb, prevKv: fc.boolean() }),
    fc.record({
      t: fc.constant('txn' as const),
      cmp: fc.array(rngArb, { maxLength: 2 }),
      success: fc.array(tie('op'), { maxLength: 2 }),
      failure: fc.array(tie('op'), { maxLength: 2 }),
    }),
  ),
})).op;

// ------------------------------------------------------------------------------------------------
// Oracle

function interval(key: string, end: string): Ivl {
  if (end === '') return { begin: key, end: key + '\0' };
  return { begin: key, end: end === '\0' ? null : end };
}

const lt = (a: string, b: string | null): boolean => b === null || a < b;
const le = (a: string | null, b: string | null): boolean => b === null || (a !== null && a <= b);

/** Merges intervals into disjoint, sorted segments (touching ones joined). */
function merge(ivls: Ivl[]): Ivl[] {
  const sorted = [...ivls].sort((x, y) => (x.begin < y.begin ? -1 : x.begin > y.begin ? 1 : 0));
  const out: Ivl[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && le(i.begin, last.end)) {
      if (!le(i.end, last.end)) last.end = i.end;
    } else out.push({ ...i });
  }
  return out;
}

/**
 * The role's permission list after granting `perms` in order, as etcd 3.4's RoleGrantPermission builds it
 * (observed on 3.4.23 with etcdctl role grant-permission / role get): the list stays sorted by key (grants on
 * an equal key keep their grant order); a grant looks at the first permission whose key is >= its key, and
 * only if that one has the same key and range_end is its type replaced — otherwise the grant is inserted
 * after the permissions with an equal key, even when another permission further on has the same key and
 * range_end. So READ "b", READ from "b", WRITE from "b" keeps all three (READ from "b" stays).
 */
function effective(perms: Perm[]): Perm[] {
  const list: Perm[] = [];
  for (const p of perms) {
    let i = 0;
    while (i < list.length && list[i]!.key < p.key) i++;
    const first = list[i];
    if (first !== undefined && first.key === p.key && first.rangeEnd === p.rangeEnd) {
      list[i] = { ...first, permType: p.permType };
      continue;
    }
    while (i < list.length && list[i]!.key === p.key) i++;
    list.splice(i, 0, { ...p });
  }
  return list;
}

function allowed(granted: Perm[], kind: Kind, key: string, end: string): boolean {
  const perms = effective(granted);
  const segs = merge(perms.filter((p) => p.permType === kind || p.permType === 'READWRITE').map((p) => interval(p.key, p.rangeEnd)));
  if (end === '') return segs.some((s) => s.begin <= key && lt(key, s.end));
  const q = interval(key, end);
  return segs.some((s) => s.begin <= q.begin && le(q.end, s.end));
}

function needs(op: Op): Array<[Kind, string, string]> {
  switch (op.t) {
    case 'range':
      return [['READ', op.r.key, op.r.end]];
    case 'put':
      return op.prevKv ? [['WRITE', op.key, ''], ['READ', op.key, '']] : [['WRITE', op.key, '']];
    case 'del':
      return op.prevKv ? [['WRITE', op.r.key, op.r.end], ['READ', op.r.key, op.r.end]] : [['WRITE', op.r.key, op.r.end]];
    case 'txn':
      return [...op.cmp.map((c): [Kind, string, string] => ['READ', c.key, c.end]), ...op.success.flatMap(needs), ...op.failure.flatMap(needs)];
  }
}

// ------------------------------------------------------------------------------------------------
// Requests

const buf = (s: string): Buffer => Buffer.from(s, 'latin1');
const rangeMsg = (r: Rng): { key: Buffer; range_end?: Buffer } => (r.end === '' ? { key: buf(r.key) } : { key: buf(r.key), range_end: buf(r.end) });

function requestOp(op: Op): M.RequestOp {
  switch (op.t) {
    case 'range':
      return { request_range: rangeMsg(op.r) };
    case 'put':
      return { request_put: { key: buf(op.key), value: buf('v'), prev_kv: op.prevKv } };
    case 'del':
      return { request_delete_range: { ...rangeMsg(op.r), prev_kv: op.prevKv } };
    case 'txn':
      return { request_txn: txnMsg(op) };
  }
}

function txnMsg(op: Extract<Op, { t: 'txn' }>): M.TxnRequest {
  return {
    compare: op.cmp.map((c) => ({ ...rangeMsg(c), target: 'VERSION' as const, result: 'GREATER' as const, version: 0 })),
    success: op.success.map(requestOp),
    failure: op.failure.map(requestOp),
  };
}

/** Txns with duplicate puts/overlapping deletes are invalid in etcd: keep the property to valid requests. */
function hasWriteConflict(op: Op): boolean {
  if (op.t !== 'txn') return false;
  // etcd's duplicate-key check (checked before permissions) counts a nested txn's writes, both its branches,
  // with its parent branch's: a branch with more than one write anywhere below it may be a duplicate.
  const branchWrites = (ops: Op[]): number =>
    ops.reduce((n, o) => n + (o.t === 'put' || o.t === 'del' ? 1 : o.t === 'txn' ? branchWrites(o.success) + branchWrites(o.failure) : 0), 0);
  return branchWrites(op.success) > 1 || branchWrites(op.failure) > 1;
}

function run(s: EtcdServer, op: Op, ctx: CallContext): void {
  const kv = s.services.kv;
  switch (op.t) {
    case 'range':
      kv.range(rangeMsg(op.r), ctx);
      return;
    case 'put':
      kv.put({ key: buf(op.key), value: buf('v'), prev_kv: op.prevKv }, ctx);
      return;
    case 'del':
      kv.deleteRange({ ...rangeMsg(op.r), prev_kv: op.prevKv }, ctx);
      return;
    case 'txn':
      kv.txn(txnMsg(op), ctx);
  }
}

test('property: a request succeeds iff the permission model allows it; a denied one changes nothing', () => {
  fc.assert(
    fc.property(fc.array(permArb, { maxLength: 5 }), fc.array(opArb, { minLength: 1, maxLength: 6 }), (perms, ops) => {
      const s = new EtcdServer({
        auth: {
          roles: [{ name: 'r', permissions: perms.map((p) => ({ permType: p.permType, key: buf(p.key), rangeEnd: buf(p.rangeEnd) })) }],
          users: [
            { name: 'root', password: 'x', roles: ['root'] },
            { name: 'u', password: 'p', roles: ['r'] },
          ],
          enable: true,
        },
      });
      const root = { token: s.services.auth.authenticate({ name: 'root', password: 'x' }).token };
      for (const k of KEYS) s.services.kv.put({ key: buf(k), value: buf('0') }, root);
      const u = { token: s.services.auth.authenticate({ name: 'u', password: 'p' }).token };
      for (const op of ops) {
        if (hasWriteConflict(op)) continue;
        const expectAllowed = needs(op).every(([kind, key, end]) => allowed(perms, kind, key, end));
        const hash = s.mvcc.hash();
        const rev = s.mvcc.currentRevision;
        let err: (Error & { details?: string }) | undefined;
        try {
          run(s, op, u);
        } catch (e) {
          err = e as Error & { details?: string };
        }
        if (expectAllowed) assert.equal(err, undefined, `allowed ${JSON.stringify(op)} failed: ${String(err?.message)}`);
        else {
          assert.equal(err?.details, 'etcdserver: permission denied', `denied ${JSON.stringify(op)} did not fail as denied`);
          assert.equal(s.mvcc.hash(), hash);
          assert.equal(s.mvcc.currentRevision, rev);
        }
        // root is never denied
        run(s, { t: 'range', r: { key: 'a', end: '\0' } }, root);
      }
    }),
    parameters(200),
  );
});
