// Auth state in snapshots: etcd's snapshot holds the auth buckets (users, roles, permissions, the enabled
// flag, the auth revision), so a member that applies one has the snapshot's auth state; simple tokens live
// in the member's memory only, and authStore.Recover leaves them alone (observed on a 3-member etcd 3.4.23
// cluster whose follower applied a leader snapshot: see AuthStore.restore).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createEtcdSim, type EtcdSim } from '../../src/client/index.js';
import type { CallContext } from '../../src/server/index.js';
import { b, rejects } from './helpers.js';
import { ErrInvalidAuthToken, ErrPermissionDenied, ErrUserEmpty } from '../../src/auth/errors.js';

/** root, users u1..u4 with role r (READWRITE on [k, l)), auth on. */
function authSim(seed = 1): EtcdSim {
  return createEtcdSim({
    time: 'virtual',
    seed,
    auth: {
      roles: [{ name: 'r', permissions: [{ permType: 'READWRITE', key: 'k', rangeEnd: 'l' }] }],
      users: [
        { name: 'root', password: 'x', roles: ['root'] },
        ...['u1', 'u2', 'u3', 'u4'].map((name) => ({ name, password: 'p', roles: ['r'] })),
      ],
      enable: true,
    },
  });
}

const login = (sim: EtcdSim, name: string, password = name === 'root' ? 'x' : 'p'): CallContext => ({
  token: sim.services.auth.authenticate({ name, password }).token,
});

function status(sim: EtcdSim, root: CallContext): { enabled: boolean; rev: string } {
  const s = sim.services.auth.authStatus({}, root);
  return { enabled: s.enabled, rev: s.authRevision };
}

test('snapshot/restore carries users, roles, permissions, the enabled flag and the auth revision', () => {
  const sim = authSim();
  const root = login(sim, 'root');
  const a = sim.services.auth;
  const before = status(sim, root);
  const snap = sim.snapshot();
  assert.ok(snap.auth !== undefined);

  // change everything the snapshot holds
  a.userAdd({ name: 'new', password: 'n' }, root);
  a.userRevokeRole({ name: 'u1', role: 'r' }, root);
  a.roleRevokePermission({ role: 'r', key: b('k'), range_end: b('l') }, root);
  a.roleAdd({ name: 'extra' }, root);
  a.roleGrantPermission({ name: 'extra', perm: { permType: 'READ', key: b('z'), range_end: b('') } }, root);
  a.authDisable({}, root);
  assert.deepEqual(a.authStatus({}), { header: a.authStatus({}).header, enabled: false, authRevision: String(Number(before.rev) + 6) });

  sim.restore(snap);
  const root2 = login(sim, 'root'); // the root token was dropped by AuthDisable; the password is the snapshot's
  assert.deepEqual(status(sim, root2), before);
  assert.deepEqual(a.userList({}, root2).users, ['root', 'u1', 'u2', 'u3', 'u4']);
  assert.deepEqual(a.roleList({}, root2).roles, ['r']);
  assert.deepEqual(a.userGet({ name: 'u1' }, root2).roles, ['r']);
  const perm = a.roleGet({ role: 'r' }, root2).perm;
  assert.deepEqual(
    perm.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.range_end).toString()]),
    [['READWRITE', 'k', 'l']],
  );
  // enforcement follows the restored state (AuthDisable dropped every token: log in again)
  const u1 = login(sim, 'u1');
  sim.services.kv.put({ key: b('k1'), value: b('v') }, u1);
  rejects(() => sim.services.kv.put({ key: b('z'), value: b('v') }, u1), ErrPermissionDenied);
  rejects(() => sim.services.kv.range({ key: b('k1') }), ErrUserEmpty); // auth is on again
  rejects(() => login(sim, 'new', 'n'), { code: 3, message: 'etcdserver: authentication failed, invalid user ID or password' });
});

test('the snapshot is a copy: changes after it do not leak into it, and it can be restored twice', () => {
  const sim = authSim();
  const root = login(sim, 'root');
  const a = sim.services.auth;
  const snap = sim.snapshot();
  a.roleGrantPermission({ name: 'r', perm: { permType: 'READ', key: b('a'), range_end: b('b') } }, root);
  a.userChangePassword({ name: 'u2', password: 'changed' }, root);
  sim.restore(snap);
  const u2 = login(sim, 'u2', 'p');
  rejects(() => sim.services.kv.range({ key: b('a1') }, u2), ErrPermissionDenied);
  a.roleGrantPermission({ name: 'r', perm: { permType: 'READ', key: b('a'), range_end: b('b') } }, login(sim, 'root'));
  sim.services.kv.range({ key: b('a1') }, u2);
  sim.restore(snap);
  rejects(() => sim.services.kv.range({ key: b('a1') }, u2), ErrPermissionDenied);
});

test('a follower restored from a leader snapshot gets its auth state but not its tokens', () => {
  const leader = authSim(1);
  const follower = createEtcdSim({ time: 'virtual', seed: 2 });
  const leaderToken = login(leader, 'u1');
  const snap = leader.snapshot();
  follower.restore(snap);
  assert.equal(follower.services.auth.authStatus({}).enabled, true);
  assert.equal(follower.services.auth.authStatus({}).authRevision, leader.services.auth.authStatus({}).authRevision);
  // tokens are in the leader's memory only
  rejects(() => follower.services.kv.range({ key: b('k') }, leaderToken), ErrInvalidAuthToken);
  rejects(() => follower.services.kv.range({ key: b('k') }), ErrUserEmpty);
  // the password hashes came along: the same passwords authenticate on the follower
  const u1 = login(follower, 'u1');
  follower.services.kv.put({ key: b('k'), value: b('v') }, u1);
  rejects(() => follower.services.kv.put({ key: b('m'), value: b('v') }, u1), ErrPermissionDenied);
});

test('the member keeps its own tokens across a restore, as an etcd 3.4.23 follower that applied a snapshot did', () => {
  // Observed on a 3-member etcd 3.4.23 cluster: tokens of u1..u3 taken through the follower; the follower
  // paused (SIGSTOP); meanwhile u2 deleted, u3's password changed, u4 authenticated, 6000 puts (the leader
  // compacts its log, so the follower gets a snapshot); follower resumed and applied the snapshot. On the
  // follower: u1 OK, u2 permission denied, u3 OK, u4 invalid auth token (on the leader: u2 and u3 invalid).
  const follower = authSim(1);
  const leader = authSim(1);
  const t1 = login(follower, 'u1');
  const t2 = login(follower, 'u2');
  const t3 = login(follower, 'u3');
  for (const t of [t1, t2, t3]) follower.services.kv.range({ key: b('k') }, t);
  const root = login(leader, 'root');
  leader.services.auth.userDelete({ name: 'u2' }, root);
  leader.services.auth.userChangePassword({ name: 'u3', password: 'q' }, root);
  const t4 = login(leader, 'u4');
  for (let i = 0; i < 20; i++) leader.services.kv.put({ key: b(`k${i % 5}`), value: b('x') }, root);
  follower.restore(leader.snapshot());
  assert.equal(follower.mvcc.currentRevision, leader.mvcc.currentRevision);
  follower.services.kv.range({ key: b('k'), serializable: true }, t1);
  rejects(() => follower.services.kv.range({ key: b('k'), serializable: true }, t2), ErrPermissionDenied);
  follower.services.kv.range({ key: b('k'), serializable: true }, t3);
  rejects(() => follower.services.kv.range({ key: b('k'), serializable: true }, t4), ErrInvalidAuthToken);
  // the restored password applies to new logins
  rejects(() => login(follower, 'u3', 'p'), { code: 3, message: 'etcdserver: authentication failed, invalid user ID or password' });
  login(follower, 'u3', 'q');
});

test('Maintenance Snapshot/restore carries the auth state too; a bare store snapshot leaves it alone', () => {
  const sim = authSim();
  const root = login(sim, 'root');
  const m = sim.services.maintenance;
  const [snap] = m.snapshot({}, root);
  assert.ok(snap !== undefined);
  sim.services.auth.userDelete({ name: 'u1' }, root);
  sim.services.auth.roleDelete({ role: 'r' }, root);
  m.restore(snap.blob);
  assert.deepEqual(sim.services.auth.userGet({ name: 'u1' }, root).roles, ['r']);
  sim.services.kv.put({ key: b('k'), value: b('v') }, login(sim, 'u1'));

  const bare = sim.mvcc.snapshot();
  sim.services.auth.userDelete({ name: 'u4' }, root);
  const rev = sim.services.auth.authStatus({}, root).authRevision;
  sim.restore(bare);
  assert.equal(sim.services.auth.authStatus({}, root).authRevision, rev);
  assert.deepEqual(sim.services.auth.userList({}, root).users, ['root', 'u1', 'u2', 'u3']);
});
