// Enforcement while auth is enabled (apply/auth.go, v3rpc/watch.go, v3_server.go): which permission each
// KV, watch and lease request needs, and that a denied request changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdServer, type CallContext } from '../../src/server/index.js';
import { covers, RangePermissions } from '../../src/auth/index.js';
import { b, rejects } from './helpers.js';
import { ErrPermissionDenied, ErrUserEmpty, ErrInvalidAuthToken } from '../../src/auth/errors.js';

const u8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** root + user u with role r holding `perms`; auth on. */
function setup(perms: Array<{ permType: 'READ' | 'WRITE' | 'READWRITE'; key: string; rangeEnd?: string }>): { s: EtcdServer; root: CallContext; u: CallContext } {
  const s = new EtcdServer({
    auth: {
      roles: [{ name: 'r', permissions: perms }],
      users: [
        { name: 'root', password: 'rootpw', roles: ['root'] },
        { name: 'u', password: 'p', roles: ['r'] },
      ],
      enable: true,
    },
  });
  const a = s.services.auth;
  return {
    s,
    root: { token: a.authenticate({ name: 'root', password: 'rootpw' }).token },
    u: { token: a.authenticate({ name: 'u', password: 'p' }).token },
  };
}

test('range permission model: points, ranges, open ends, contiguous unions (adt Contains)', () => {
  const p = new RangePermissions();
  p.add({ permType: 'READ', key: u8('a'), rangeEnd: u8('c') });
  p.add({ permType: 'READ', key: u8('c'), rangeEnd: u8('e') });
  p.add({ permType: 'WRITE', key: u8('k'), rangeEnd: new Uint8Array(0) });
  p.add({ permType: 'READWRITE', key: u8('x'), rangeEnd: Uint8Array.of(0) });
  assert.equal(p.permits('READ', u8('b'), undefined), true);
  assert.equal(p.permits('READ', u8('a'), u8('e')), true, 'touching intervals are contiguous');
  assert.equal(p.permits('READ', u8('a'), u8('e\0')), false);
  assert.equal(p.permits('READ', u8('k'), undefined), false);
  assert.equal(p.permits('WRITE', u8('k'), undefined), true);
  assert.equal(p.permits('WRITE', u8('k'), u8('k\0')), true, 'a single-key permission is [k, k\\0)');
  assert.equal(p.permits('WRITE', u8('k'), u8('l')), false);
  assert.equal(p.permits('READ', u8('x'), Uint8Array.of(0)), true, 'open-ended request within an open-ended permission');
  assert.equal(p.permits('WRITE', u8('zzz'), undefined), true);
  assert.equal(p.permits('READ', u8('w'), Uint8Array.of(0)), false);
  assert.equal(covers([], { begin: u8('a'), end: u8('b') }), false);
});

test('Range needs READ over the whole range; no token is ErrUserEmpty; bad token ErrInvalidAuthToken; root reads all', () => {
  const { s, root, u } = setup([{ permType: 'READ', key: 'a', rangeEnd: 'm' }]);
  const kv = s.services.kv;
  kv.range({ key: b('b') }, u);
  kv.range({ key: b('a'), range_end: b('m') }, u);
  rejects(() => kv.range({ key: b('a'), range_end: b('n') }, u), ErrPermissionDenied);
  rejects(() => kv.range({ key: b('z') }, u), ErrPermissionDenied);
  rejects(() => kv.range({ key: b('b') }), ErrUserEmpty);
  rejects(() => kv.range({ key: b('b') }, { token: 'nope.9' }), ErrInvalidAuthToken);
  kv.range({ key: b('\0'), range_end: b('\0') }, root);
});

test('Put needs WRITE, plus READ with prev_kv, plus WRITE on the keys already on its lease', () => {
  const { s, root, u } = setup([
    { permType: 'WRITE', key: 'w' },
    { permType: 'READWRITE', key: 'rw' },
  ]);
  const kv = s.services.kv;
  kv.put({ key: b('w'), value: b('1') }, u);
  rejects(() => kv.put({ key: b('w'), value: b('1'), prev_kv: true }, u), ErrPermissionDenied);
  kv.put({ key: b('rw'), value: b('1'), prev_kv: true }, u);
  rejects(() => kv.put({ key: b('x'), value: b('1') }, u), ErrPermissionDenied);
  const lease = s.services.lease.leaseGrant({ TTL: 60 }, root).ID;
  kv.put({ key: b('secret'), value: b('s'), lease }, root);
  rejects(() => kv.put({ key: b('w'), value: b('2'), lease }, u), ErrPermissionDenied);
  rejects(() => s.services.lease.leaseRevoke({ ID: lease }, u), ErrPermissionDenied);
  s.services.lease.leaseRevoke({ ID: lease }, root);
});

test('DeleteRange needs WRITE over the range, READ too with prev_kv', () => {
  const { s, u } = setup([
    { permType: 'WRITE', key: 'a', rangeEnd: 'c' },
    { permType: 'READ', key: 'a', rangeEnd: 'b' },
  ]);
  const kv = s.services.kv;
  kv.deleteRange({ key: b('a'), range_end: b('c') }, u);
  rejects(() => kv.deleteRange({ key: b('a'), range_end: b('d') }, u), ErrPermissionDenied);
  kv.deleteRange({ key: b('a'), range_end: b('b'), prev_kv: true }, u);
  rejects(() => kv.deleteRange({ key: b('a'), range_end: b('c'), prev_kv: true }, u), ErrPermissionDenied);
});

test('Txn checks every compare and every op of both branches, nested txns included', () => {
  const { s, u } = setup([
    { permType: 'READ', key: 'r' },
    { permType: 'WRITE', key: 'w' },
  ]);
  const kv = s.services.kv;
  const put = (k: string) => ({ request_put: { key: b(k), value: b('v') } });
  const get = (k: string) => ({ request_range: { key: b(k) } });
  const cmp = (k: string) => ({ key: b(k), target: 'VERSION' as const, result: 'EQUAL' as const, version: 0 });
  kv.txn({ compare: [cmp('r')], success: [put('w')], failure: [get('r')] }, u);
  // The failure branch would never run (r has version 0) but is checked all the same.
  rejects(() => kv.txn({ compare: [cmp('r')], success: [put('w')], failure: [put('x')] }, u), ErrPermissionDenied);
  rejects(() => kv.txn({ compare: [cmp('w')], success: [put('w')] }, u), ErrPermissionDenied);
  rejects(() => kv.txn({ success: [{ request_txn: { success: [get('w')] } }] }, u), ErrPermissionDenied);
  rejects(() => kv.txn({ success: [{ request_delete_range: { key: b('w'), prev_kv: true } }] }, u), ErrPermissionDenied);
});

test('a denied write changes nothing in the store (hash, revision) but is one Raft entry', () => {
  const { s, u } = setup([{ permType: 'READ', key: 'a' }]);
  const hash = s.mvcc.hash();
  const revision = s.mvcc.currentRevision;
  const index = s.raftIndex;
  rejects(() => s.services.kv.put({ key: b('a'), value: b('v') }, u), ErrPermissionDenied);
  rejects(() => s.services.kv.txn({ success: [{ request_put: { key: b('a'), value: b('v') } }] }, u), ErrPermissionDenied);
  rejects(() => s.services.kv.range({ key: b('z') }, u), ErrPermissionDenied);
  assert.equal(s.mvcc.hash(), hash);
  assert.equal(s.mvcc.currentRevision, revision);
  assert.equal(s.raftIndex, index + 2, 'two denied proposals, the denied read is not proposed');
});

test('Watch on an unreadable range: created+canceled, watch_id -1, with etcd\'s reason (Go status text, as 3.4.23 sends it); order kept', () => {
  const { s, u } = setup([{ permType: 'READ', key: 'a', rangeEnd: 'c' }]);
  const call = s.services.watch.watch(u);
  call.write({ create_request: { key: b('a'), range_end: b('c') } });
  call.write({ create_request: { key: b('a'), range_end: b('d') } });
  call.write({ create_request: { key: b('b') } });
  const rs = call.take();
  assert.deepEqual(
    rs.map((r) => [r.watch_id, r.created, r.canceled, r.cancel_reason]),
    [
      ['0', true, false, ''],
      ['-1', true, true, 'rpc error: code = PermissionDenied desc = etcdserver: permission denied'],
      ['1', true, false, ''],
    ],
  );
  const anon = s.services.watch.watch();
  anon.write({ create_request: { key: b('a') } });
  assert.equal(anon.take()[0]?.cancel_reason, 'rpc error: code = InvalidArgument desc = etcdserver: user name is empty');
  const bad = s.services.watch.watch({ token: 'x.1' });
  bad.write({ create_request: { key: b('a') } });
  assert.equal(bad.take()[0]?.cancel_reason, 'rpc error: code = Unauthenticated desc = etcdserver: invalid auth token');
});

test('LeaseTimeToLive needs READ and KeepAlive WRITE on the attached keys (root always); no token: user name is empty', () => {
  const { s, root, u } = setup([{ permType: 'READ', key: 'k' }]);
  const lease = s.services.lease.leaseGrant({ TTL: 60 }, root).ID;
  s.services.kv.put({ key: b('k'), value: b('v'), lease }, root);
  assert.equal(s.services.lease.leaseTimeToLive({ ID: lease }, u).TTL, '60');
  rejects(() => s.services.lease.leaseTimeToLive({ ID: lease }), ErrUserEmpty);
  const ka = s.services.lease.leaseKeepAlive(u);
  let ended: string | undefined;
  ka.onEnd((err) => (ended = err?.details));
  ka.write({ ID: lease });
  assert.equal(ended, 'etcdserver: permission denied');
  const kr = s.services.lease.leaseKeepAlive(root);
  kr.write({ ID: lease });
  assert.equal(kr.take()[0]?.TTL, '60');
});
