/**
 * sameCanon (src/diff/normalise.ts) is the shadow's quick comparison of two answers: it must never call
 * equal two messages whose canonical texts differ — a divergence missed — and it should call equal a message
 * and its copy, the common case it exists for. Messages here are drawn from a small space (etcd's field names,
 * the free header fields, lease fields, bytes, int64 strings, nesting) so that independently drawn pairs are
 * often equal, or equal but for one free or lease field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { canon, sameCanon, text, type LeaseNames } from '../../src/diff/normalise.js';

const KEYS = ['header', 'cluster_id', 'member_id', 'raft_term', 'revision', 'kvs', 'key', 'lease', 'ID', 'leases', 'keys', 'more'] as const;
const leases: LeaseNames = { names: new Map([['7', 'L1'], ['8', 'L1'], ['9', 'L2']]) };

const scalar = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.constantFrom(0, 1, -0, Number.NaN, Infinity),
  fc.constantFrom('0', '1', '7', '8', '9', 'L1', 'true'),
  fc.constantFrom(0n, 1n, 7n),
  fc.uint8Array({ maxLength: 2 }).map((u) => (u.length === 1 ? u : Buffer.from(u))),
);
const { msg } = fc.letrec<{ msg: unknown }>((tie) => ({
  msg: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('msg'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('msg'), { maxKeys: 4 }),
  ),
}));

/** A deep copy: new objects, arrays and Buffers, each object's keys in reverse order (canon sorts them). */
function copy(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return Buffer.from(v);
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(copy);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, copy(x)]));
  return v;
}

/** Whether canon sorts a list somewhere in `v`, or a number JSON cannot say exactly (sameCanon leaves both to the texts). */
function unsure(v: unknown, parentKey = ''): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (Array.isArray(v)) return parentKey === 'leases' || parentKey === 'keys' || v.some((x) => unsure(x, parentKey));
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) return Object.entries(v).some(([k, x]) => unsure(x, k));
  return false;
}

test('sameCanon: never equal where the canonical texts differ; equal for a message and its copy', () => {
  fc.assert(
    fc.property(msg, msg, fc.constantFrom('', 'header', 'kvs'), (a, b, parent) => {
      if (sameCanon(a, b, leases, parent)) assert.equal(text(canon(a, leases, parent)), text(canon(b, leases, parent)));
      if (!unsure(a, parent)) assert.equal(sameCanon(a, copy(a), leases, parent), true);
    }),
    { numRuns: 3000 },
  );
});

test('sameCanon reads free header fields and lease names as canon does', () => {
  const at = (header: Record<string, string>, lease: string): unknown => ({ header, kvs: [{ key: Buffer.from('k'), lease }] });
  assert.equal(sameCanon(at({ cluster_id: '1', raft_term: '2', revision: '5' }, '7'), at({ cluster_id: '9', raft_term: '3', revision: '5' }, '8'), leases), true);
  assert.equal(sameCanon(at({ cluster_id: '1', revision: '5' }, '7'), at({ cluster_id: '1', revision: '6' }, '7'), leases), false);
  assert.equal(sameCanon(at({ raft_term: '0', revision: '5' }, '7'), at({ raft_term: '2', revision: '5' }, '7'), leases), false);
  assert.equal(sameCanon(at({ revision: '5' }, '7'), at({ revision: '5' }, '9'), leases), false);
  assert.equal(sameCanon({ kvs: [{ key: Buffer.from('a') }] }, { kvs: [{ key: Buffer.from('b') }] }, leases), false);
  // The same number of keys, one of them not b's own enumerable key (canon would print b's other one).
  const hidden = Object.defineProperty({ other: 1 }, 'x', { value: 1, enumerable: false });
  assert.equal(sameCanon({ x: 1 }, hidden, leases), false);
});
