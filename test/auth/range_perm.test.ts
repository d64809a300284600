// The permission check as etcd 3.4's pkg/adt interval tree answers it, for empty and inverted requests
// (range_end <= key) where the answer depends on the tree built from the user's permissions. Every expected
// answer below was observed on etcd 3.4.23 (roles r1, r2 granted to one user; Range / DeleteRange as that
// user): allowed = count 0 / deleted 0, denied = "etcdserver: permission denied".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { PermissionTree, RangePermissions, covers, type KeyPermission, type PermissionType } from '../../src/auth/index.js';
import { EtcdServer } from '../../src/server/index.js';
import { parameters } from '../properties/harness.js';
import { ErrPermissionDenied } from '../../src/auth/errors.js';

const u8 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));
const perm = (permType: PermissionType, key: string, rangeEnd = ''): KeyPermission => ({ permType, key: u8(key), rangeEnd: u8(rangeEnd) });

function perms(...ps: KeyPermission[]): RangePermissions {
  const r = new RangePermissions();
  for (const p of ps) r.add(p);
  return r;
}

test('empty range [a, a) under READ from "a": allowed (the query overlaps [a, +inf) by adt Compare)', () => {
  const p = perms(perm('READ', 'a', '\0'));
  assert.equal(p.permits('READ', u8('a'), u8('a')), true);
});

test('inverted range inside a granted range: READ [a, c) allows [b, a); READ [c, d) denies it', () => {
  assert.equal(perms(perm('READ', 'a', 'c')).permits('READ', u8('b'), u8('a')), true);
  assert.equal(perms(perm('READ', 'c', 'd')).permits('READ', u8('b'), u8('a')), false);
  assert.equal(new RangePermissions().permits('READ', u8('b'), u8('a')), false, 'no permission at all');
});

test('empty and inverted ranges at a single-key permission: READWRITE "b" allows [b, b), [b, a), delete [b, b)', () => {
  const p = perms(perm('READWRITE', 'b'));
  assert.equal(p.permits('READ', u8('b'), u8('b')), true);
  assert.equal(p.permits('READ', u8('b'), u8('a')), true);
  assert.equal(p.permits('WRITE', u8('b'), u8('b')), true);
  assert.equal(p.permits('READ', u8('c'), u8('b')), false);
});

test('three disjoint READ ranges [a,b) [c,d) [e,f): [e, a) and [d, c) denied (pruned at the root), [c, b) allowed', () => {
  const p = perms(perm('READ', 'a', 'b'), perm('READ', 'c', 'd'), perm('READ', 'e', 'f'));
  assert.deepEqual(p.read.shape(), ['B[c,d)max=f', 'R[a,b)max=b', 'R[e,f)max=f']);
  assert.equal(p.permits('READ', u8('e'), u8('a')), false);
  assert.equal(p.permits('READ', u8('c'), u8('b')), true);
  assert.equal(p.permits('READ', u8('d'), u8('c')), false);
});

test('the same permissions in another insertion order give another tree and another answer (etcd 3.4.23)', () => {
  // one role: stored sorted by key, so [a, a) goes in first and becomes the root; the query [aa, a) lies
  // right of it and the subtree [a, max +inf) does not "overlap" it (asymmetric compare): nothing visited.
  const oneRole = perms(perm('READWRITE', 'a', 'a'), perm('WRITE', 'aa', '\0'));
  assert.deepEqual(oneRole.write.shape(), ['B[a,a)max=∞', 'R[aa,∞)max=∞']);
  assert.equal(oneRole.permits('WRITE', u8('aa'), u8('a')), false);
  // two roles r1 (WRITE from "aa") and r2 (READWRITE [a, a)): r1's permission is inserted first
  const twoRoles = perms(perm('WRITE', 'aa', '\0'), perm('READWRITE', 'a', 'a'));
  assert.deepEqual(twoRoles.write.shape(), ['B[aa,∞)max=∞', 'R[a,a)max=a']);
  assert.equal(twoRoles.permits('WRITE', u8('aa'), u8('a')), true);
});

test('through the server: the role split decides a DeleteRange [aa, a), as on etcd 3.4.23', () => {
  const run = (roles: Array<{ name: string; permissions: Array<{ permType: PermissionType; key: string; rangeEnd?: string }> }>): unknown => {
    const s = new EtcdServer({
      auth: { roles, users: [{ name: 'root', password: 'x', roles: ['root'] }, { name: 'u', password: 'p', roles: roles.map((r) => r.name) }], enable: true },
    });
    const u = { token: s.services.auth.authenticate({ name: 'u', password: 'p' }).token };
    try {
      return s.services.kv.deleteRange({ key: Buffer.from('aa'), range_end: Buffer.from('a') }, u).deleted;
    } catch (e) {
      return (e as { details?: string }).details;
    }
  };
  assert.equal(
    run([{ name: 'r1', permissions: [{ permType: 'WRITE', key: 'aa', rangeEnd: '\0' }, { permType: 'READWRITE', key: 'a', rangeEnd: 'a' }] }]),
    ErrPermissionDenied.message,
  );
  assert.equal(
    run([
      { name: 'r1', permissions: [{ permType: 'WRITE', key: 'aa', rangeEnd: '\0' }] },
      { name: 'r2', permissions: [{ permType: 'READWRITE', key: 'a', rangeEnd: 'a' }] },
    ]),
    '0',
  );
});

test('proper ranges: contiguous unions in any insertion order; a gap or a short end denies', () => {
  const ivls = [
    { begin: u8('c'), end: u8('e') },
    { begin: u8('a'), end: u8('c') },
    { begin: u8('x'), end: undefined },
    { begin: u8('e'), end: u8('g') },
  ];
  assert.equal(covers(ivls, { begin: u8('a'), end: u8('g') }), true);
  assert.equal(covers(ivls, { begin: u8('b'), end: u8('f') }), true);
  assert.equal(covers(ivls, { begin: u8('a'), end: u8('h') }), false);
  assert.equal(covers(ivls, { begin: u8('f'), end: u8('y') }), false, 'gap [g, x)');
  assert.equal(covers(ivls, { begin: u8('y'), end: undefined }), true);
  const t = new PermissionTree();
  for (const i of ivls) t.insert(i);
  assert.equal(t.size, 4);
  assert.equal(t.intersects({ begin: u8('f'), end: u8('f\0') }), true);
  assert.equal(t.intersects({ begin: u8('h'), end: u8('h\0') }), false);
});

test('red-black balancing: 64 sorted insertions keep the height logarithmic and every answer correct', () => {
  const t = new PermissionTree();
  const key = (i: number): string => `k${String(i).padStart(3, '0')}`;
  for (let i = 0; i < 64; i += 2) t.insert({ begin: u8(key(i)), end: u8(key(i + 1)) });
  for (let i = 1; i < 64; i += 2) t.insert({ begin: u8(key(i)), end: u8(key(i + 1)) });
  assert.equal(t.size, 64);
  assert.equal(t.contains({ begin: u8(key(0)), end: u8(key(64)) }), true);
  assert.equal(t.contains({ begin: u8(key(0)), end: u8(key(65)) }), false);
  for (let i = 0; i < 64; i++) assert.equal(t.intersects({ begin: u8(key(i)), end: u8(`${key(i)}\0`) }), true, key(i));
  assert.equal(t.intersects({ begin: u8('k064'), end: u8('k064\0') }), false);
  // a red-black tree of 64 nodes is at most 2*log2(65) ≈ 12 levels deep (unbalanced: 33)
  assert.ok(t.height() <= 12, `height ${t.height()}`);
  assert.ok(t.height() >= 7);
});

test('property: for proper queries the tree agrees with a naive merge of the intervals (any insertion order)', () => {
  const keyArb = fc.integer({ min: 0, max: 40 }).map((i) => String.fromCharCode(97 + Math.floor(i / 8)) + String.fromCharCode(97 + (i % 8)));
  const ivlArb = fc.tuple(keyArb, fc.oneof(keyArb, fc.constant(null))).filter(([b, e]) => e === null || b < e);
  fc.assert(
    fc.property(fc.array(ivlArb, { maxLength: 30 }), keyArb, fc.oneof(keyArb, fc.constant(null)), (raw, qb, qe) => {
      fc.pre(qe === null || qb < qe);
      const t = new PermissionTree();
      for (const [b, e] of raw) t.insert({ begin: u8(b), end: e === null ? undefined : u8(e) });
      // naive: walk from qb over the intervals, extending while one covers the current point
      let at: string | null = qb;
      for (let moved = true; moved && at !== null && (qe === null || at < qe); ) {
        moved = false;
        for (const [b, e] of raw) {
          if (b <= at && (e === null || at < e)) {
            at = e;
            moved = true;
            break;
          }
        }
      }
      const expected = at === null || (qe !== null && at >= qe);
      assert.equal(t.contains({ begin: u8(qb), end: qe === null ? undefined : u8(qe) }), expected);
      const point = raw.some(([b, e]) => b <= qb && (e === null || qb < e));
      assert.equal(t.intersects({ begin: u8(qb), end: u8(`${qb}\0`) }), point);
      assert.ok(t.height() <= 2 * Math.log2(raw.length + 1) + 1);
    }),
    parameters(300),
  );
});
