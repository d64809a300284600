// The auth store and AuthService in message form: every rule and error of etcd's auth store
// (server/auth/store.go, apply/auth.go) with the auth revision bumps etcd makes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdServer, type CallContext } from '../../src/server/index.js';
import { GrpcCode } from '../../src/etcd/index.js';
import { b, rejects } from './helpers.js';
import {
  ErrAuthFailed,
  ErrAuthNotEnabled,
  ErrInvalidAuthMgmt,
  ErrInvalidAuthToken,
  ErrNoPasswordUser,
  ErrPermissionDenied,
  ErrPermissionNotGiven,
  ErrPermissionNotGranted,
  ErrRoleAlreadyExist,
  ErrRoleEmpty,
  ErrRoleNotFound,
  ErrRoleNotGranted,
  ErrRootRoleNotExist,
  ErrRootUserNotExist,
  ErrUserAlreadyExist,
  ErrUserEmpty,
  ErrUserNotFound,
} from '../../src/auth/errors.js';

function fresh(): EtcdServer {
  return new EtcdServer();
}

/** root/rootpw with role root, auth enabled; returns root's context. */
function enabled(s: EtcdServer): CallContext {
  const a = s.services.auth;
  a.userAdd({ name: 'root', password: 'rootpw' });
  a.userGrantRole({ user: 'root', role: 'root' });
  a.authEnable({});
  return { token: a.authenticate({ name: 'root', password: 'rootpw' }).token };
}

const rev = (s: EtcdServer): string => s.services.auth.authStatus({}).authRevision;

test('error kinds carry etcd rpctypes codes and messages', () => {
  assert.deepEqual(ErrUserAlreadyExist, { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: user name already exists' });
  assert.deepEqual(ErrUserEmpty, { code: GrpcCode.INVALID_ARGUMENT, message: 'etcdserver: user name is empty' });
  assert.deepEqual(ErrAuthFailed, { code: GrpcCode.INVALID_ARGUMENT, message: 'etcdserver: authentication failed, invalid user ID or password' });
  assert.deepEqual(ErrPermissionDenied, { code: GrpcCode.PERMISSION_DENIED, message: 'etcdserver: permission denied' });
  assert.deepEqual(ErrInvalidAuthToken, { code: GrpcCode.UNAUTHENTICATED, message: 'etcdserver: invalid auth token' });
  assert.deepEqual(ErrInvalidAuthMgmt, { code: GrpcCode.INVALID_ARGUMENT, message: 'etcdserver: invalid auth management' });
  assert.deepEqual(ErrRootRoleNotExist, { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: root user does not have root role' });
});

test('AuthEnable needs user root with role root; status and revision', () => {
  const s = fresh();
  const a = s.services.auth;
  assert.deepEqual({ enabled: a.authStatus({}).enabled, rev: rev(s) }, { enabled: false, rev: '1' });
  rejects(() => a.authEnable({}), ErrRootUserNotExist);
  a.userAdd({ name: 'root', password: 'pw' });
  assert.equal(rev(s), '2');
  rejects(() => a.authEnable({}), ErrRootRoleNotExist);
  a.userGrantRole({ user: 'root', role: 'root' }); // role root need not exist
  assert.equal(rev(s), '3');
  a.authEnable({});
  assert.equal(a.authStatus({}).enabled, true);
  assert.equal(rev(s), '3', 'AuthEnable does not bump the auth revision');
  const ctx = { token: a.authenticate({ name: 'root', password: 'pw' }).token };
  a.authEnable({}, ctx); // already enabled: ignored
  a.authDisable({}, ctx);
  assert.equal(a.authStatus({}).enabled, false);
  assert.equal(rev(s), '4', 'AuthDisable bumps it');
  a.authDisable({}); // already disabled: no error, no bump
  assert.equal(rev(s), '4');
});

test('Authenticate: not enabled, unknown user, wrong password, no-password user; token shape', () => {
  const s = fresh();
  const a = s.services.auth;
  rejects(() => a.authenticate({ name: 'root', password: 'x' }), ErrAuthNotEnabled);
  enabled(s);
  rejects(() => a.authenticate({ name: 'nobody', password: 'x' }), ErrAuthFailed);
  rejects(() => a.authenticate({ name: 'root', password: 'wrong' }), ErrAuthFailed);
  const ctx = { token: a.authenticate({ name: 'root', password: 'rootpw' }).token };
  a.userAdd({ name: 'np', options: { no_password: true } }, ctx);
  rejects(() => a.authenticate({ name: 'np', password: '' }), ErrNoPasswordUser);
  assert.match(ctx.token, /^[a-zA-Z]{16}\.\d+$/);
});

test('users: empty name, duplicates, not found, sorted list, roles sorted, duplicate grant ignored', () => {
  const s = fresh();
  const a = s.services.auth;
  rejects(() => a.userAdd({ name: '', password: 'x' }), ErrUserEmpty);
  a.userAdd({ name: 'bob', password: 'x' });
  a.userAdd({ name: 'alice', password: 'x' });
  rejects(() => a.userAdd({ name: 'bob', password: 'y' }), ErrUserAlreadyExist);
  assert.deepEqual(a.userList({}).users, ['alice', 'bob']);
  rejects(() => a.userGet({ name: 'carol' }), ErrUserNotFound);
  rejects(() => a.userDelete({ name: 'carol' }), ErrUserNotFound);
  rejects(() => a.userChangePassword({ name: 'carol', password: 'x' }), ErrUserNotFound);
  rejects(() => a.userGrantRole({ user: 'carol', role: 'r' }), ErrUserNotFound);
  rejects(() => a.userGrantRole({ user: 'bob', role: 'nope' }), ErrRoleNotFound);
  a.roleAdd({ name: 'zeta' });
  a.roleAdd({ name: 'alpha' });
  a.userGrantRole({ user: 'bob', role: 'zeta' });
  a.userGrantRole({ user: 'bob', role: 'alpha' });
  const r = rev(s);
  a.userGrantRole({ user: 'bob', role: 'alpha' });
  assert.equal(rev(s), r, 'a grant of a role already held changes nothing');
  assert.deepEqual(a.userGet({ name: 'bob' }).roles, ['alpha', 'zeta']);
  rejects(() => a.userRevokeRole({ name: 'alice', role: 'alpha' }), ErrRoleNotGranted);
  rejects(() => a.userRevokeRole({ name: 'carol', role: 'alpha' }), ErrUserNotFound);
  a.userRevokeRole({ name: 'bob', role: 'zeta' });
  assert.deepEqual(a.userGet({ name: 'bob' }).roles, ['alpha']);
  a.userDelete({ name: 'alice' });
  assert.deepEqual(a.userList({}).users, ['bob']);
});

test('roles: empty, duplicate, not found, grant updates in place and sorts by key, revoke needs exact key and range', () => {
  const s = fresh();
  const a = s.services.auth;
  rejects(() => a.roleAdd({ name: '' }), ErrRoleEmpty);
  a.roleAdd({ name: 'r' });
  rejects(() => a.roleAdd({ name: 'r' }), ErrRoleAlreadyExist);
  rejects(() => a.roleGet({ role: 'x' }), ErrRoleNotFound);
  rejects(() => a.roleDelete({ role: 'x' }), ErrRoleNotFound);
  rejects(() => a.roleGrantPermission({ name: 'x', perm: { permType: 'READ', key: b('a') } }), ErrRoleNotFound);
  rejects(() => a.roleGrantPermission({ name: 'r' }), ErrPermissionNotGiven);
  a.roleGrantPermission({ name: 'r', perm: { permType: 'READ', key: b('m') } });
  a.roleGrantPermission({ name: 'r', perm: { permType: 'WRITE', key: b('a'), range_end: b('c') } });
  a.roleGrantPermission({ name: 'r', perm: { permType: 'READWRITE', key: b('m') } });
  const perms = a.roleGet({ role: 'r' }).perm.map((p) => [p.permType, p.key.toString(), p.range_end.toString()]);
  assert.deepEqual(perms, [['WRITE', 'a', 'c'], ['READWRITE', 'm', '']]);
  rejects(() => a.roleRevokePermission({ role: 'r', key: b('a') }), ErrPermissionNotGranted);
  rejects(() => a.roleRevokePermission({ role: 'x', key: b('a') }), ErrRoleNotFound);
  a.roleRevokePermission({ role: 'r', key: b('a'), range_end: b('c') });
  assert.equal(a.roleGet({ role: 'r' }).perm.length, 1);
  a.userAdd({ name: 'u', password: 'p' });
  a.userGrantRole({ user: 'u', role: 'r' });
  a.roleDelete({ role: 'r' });
  assert.deepEqual(a.userGet({ name: 'u' }).roles, [], 'deleting a role takes it from its users');
  a.roleAdd({ name: 'root' });
  const root = a.roleGet({ role: 'root' }).perm;
  assert.deepEqual(root.map((p) => [p.permType, [...p.key], [...p.range_end]]), [['READWRITE', [], [0]]]);
  assert.deepEqual(a.roleList({}).roles, ['root']);
});

test('auth revision: each successful change bumps it by one, failures do not', () => {
  const s = fresh();
  const a = s.services.auth;
  const steps: Array<[() => unknown, () => unknown]> = [
    [() => a.roleAdd({ name: 'r' }), () => a.roleAdd({ name: 'r' })],
    [() => a.userAdd({ name: 'u', password: 'p' }), () => a.userAdd({ name: 'u', password: 'p' })],
    [() => a.userGrantRole({ user: 'u', role: 'r' }), () => a.userGrantRole({ user: 'u', role: 'nope' })],
    [() => a.roleGrantPermission({ name: 'r', perm: { permType: 'READ', key: b('k') } }), () => a.roleGrantPermission({ name: 'x', perm: {} })],
    [() => a.roleRevokePermission({ role: 'r', key: b('k') }), () => a.roleRevokePermission({ role: 'r', key: b('k') })],
    [() => a.userChangePassword({ name: 'u', password: 'q' }), () => a.userChangePassword({ name: 'x', password: 'q' })],
    [() => a.userRevokeRole({ name: 'u', role: 'r' }), () => a.userRevokeRole({ name: 'u', role: 'r' })],
    [() => a.userDelete({ name: 'u' }), () => a.userDelete({ name: 'u' })],
    [() => a.roleDelete({ role: 'r' }), () => a.roleDelete({ role: 'r' })],
  ];
  let expect = 1;
  for (const [ok, bad] of steps) {
    ok();
    expect++;
    assert.equal(rev(s), String(expect));
    assert.throws(bad); // a failing change changes nothing
    assert.equal(rev(s), String(expect));
  }
});

test('while enabled: root cannot be deleted, lose role root, nor can role root be deleted', () => {
  const s = fresh();
  const ctx = enabled(s);
  const a = s.services.auth;
  a.roleAdd({ name: 'root' }, ctx);
  rejects(() => a.userDelete({ name: 'root' }, ctx), ErrInvalidAuthMgmt);
  rejects(() => a.userRevokeRole({ name: 'root', role: 'root' }, ctx), ErrInvalidAuthMgmt);
  rejects(() => a.roleDelete({ role: 'root' }, ctx), ErrInvalidAuthMgmt);
});

test('admin RPCs need root; UserGet on oneself and RoleGet on an own role are allowed', () => {
  const s = fresh();
  const root = enabled(s);
  const a = s.services.auth;
  a.userAdd({ name: 'u', password: 'p' }, root);
  a.roleAdd({ name: 'r' }, root);
  a.roleAdd({ name: 'other' }, root);
  a.userGrantRole({ user: 'u', role: 'r' }, root);
  const u = { token: a.authenticate({ name: 'u', password: 'p' }).token };
  rejects(() => a.userAdd({ name: 'v', password: 'p' }, u), ErrPermissionDenied);
  rejects(() => a.userList({}, u), ErrPermissionDenied);
  rejects(() => a.roleList({}, u), ErrPermissionDenied);
  rejects(() => a.authDisable({}, u), ErrPermissionDenied);
  rejects(() => a.userGet({ name: 'root' }, u), ErrPermissionDenied);
  rejects(() => a.roleGet({ role: 'other' }, u), ErrPermissionDenied);
  rejects(() => a.userAdd({ name: 'v', password: 'p' }), ErrUserEmpty);
  assert.deepEqual(a.userGet({ name: 'u' }, u).roles, ['r']);
  assert.deepEqual(a.roleGet({ role: 'r' }, u).perm, []);
  assert.equal(a.authStatus({}, u).enabled, true);
  rejects(() => s.services.maintenance.defragment({}, u), ErrPermissionDenied);
  rejects(() => s.services.maintenance.hashKV({}, u), ErrPermissionDenied);
  rejects(() => s.services.maintenance.status({}), ErrUserEmpty);
  assert.equal(s.services.maintenance.status({}, u).version.length > 0, true);
  s.services.maintenance.hashKV({}, root);
});

test('tokens: unknown token is UNAUTHENTICATED; TTL on the virtual clock, renewed by use; password change, user delete and AuthDisable drop them', () => {
  const s = new EtcdServer({ authTokenTTL: 10 });
  const clock = s.clock as import('../../src/sim/index.js').VirtualClock;
  const root = enabled(s);
  const a = s.services.auth;
  const kv = s.services.kv;
  rejects(() => kv.range({ key: b('k') }, { token: 'bogus.1' }), ErrInvalidAuthToken);
  clock.advance(9000);
  kv.range({ key: b('k') }, root); // renews
  clock.advance(9000);
  kv.range({ key: b('k') }, root);
  clock.advance(10_001);
  rejects(() => kv.range({ key: b('k') }, root), ErrInvalidAuthToken);
  const r2 = { token: a.authenticate({ name: 'root', password: 'rootpw' }).token };
  a.userAdd({ name: 'u', password: 'p' }, r2);
  a.userGrantRole({ user: 'u', role: 'root' }, r2);
  const u1 = { token: a.authenticate({ name: 'u', password: 'p' }).token };
  kv.put({ key: b('k'), value: b('v') }, u1);
  a.userChangePassword({ name: 'u', password: 'q' }, r2);
  rejects(() => kv.range({ key: b('k') }, u1), ErrInvalidAuthToken);
  rejects(() => a.authenticate({ name: 'u', password: 'p' }), ErrAuthFailed);
  const u2 = { token: a.authenticate({ name: 'u', password: 'q' }).token };
  a.userDelete({ name: 'u' }, r2);
  rejects(() => kv.range({ key: b('k') }, u2), ErrInvalidAuthToken);
  a.authDisable({}, r2);
  kv.range({ key: b('k') }, { token: 'anything' }); // disabled: tokens are not looked at
  a.authEnable({});
  rejects(() => kv.range({ key: b('k') }, r2), ErrInvalidAuthToken);
});

test('password hashing: fast by default, bcrypt-like cost on request, never stored in clear', () => {
  const s = new EtcdServer({ authHashCost: 4 });
  assert.equal(s.auth.hasher.cost, 4);
  enabled(s);
  assert.throws(() => new EtcdServer({ authHashCost: 3 }), RangeError);
});

test('createEtcdSim-style setup: users and roles configured at start, auth enabled', () => {
  const s = new EtcdServer({
    auth: {
      roles: [{ name: 'reader', permissions: [{ permType: 'READ', key: 'app/', rangeEnd: 'app0' }] }],
      users: [
        { name: 'root', password: 'r', roles: ['root'] },
        { name: 'app', password: 'a', roles: ['reader'] },
      ],
      enable: true,
    },
  });
  const a = s.services.auth;
  assert.equal(a.authStatus({}).enabled, true);
  const app = { token: a.authenticate({ name: 'app', password: 'a' }).token };
  s.services.kv.range({ key: b('app/'), range_end: b('app0') }, app);
  rejects(() => s.services.kv.put({ key: b('app/x'), value: b('1') }, app), ErrPermissionDenied);
});
