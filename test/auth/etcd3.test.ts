// The etcd3 client's user/role API and authenticated clients, in-process on the simulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdAuthenticationFailedError, EtcdPermissionDeniedError, EtcdUserNotFoundError, EtcdRoleNotGrantedError, GRPCInvalidArgumentError } from 'etcd3';
import { createEtcdSim } from '../../src/index.js';
import { serverOf } from '../../src/client/index.js';

test('etcd3: users and roles end to end, then an auth-enabled client is allowed and denied as its role says', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const admin = sim.etcd3();
  const rootUser = await admin.user('root').create('rootpw');
  await rootUser.addRole('root');
  const reader = await admin.role('reader').create();
  await reader.grant({ permission: 'Read', range: admin.range({ prefix: 'app/' }) });
  await reader.grant({ permission: 'Readwrite', key: 'app/own' });
  const app = await admin.user('app').create('apppw');
  await app.addRole(reader);
  assert.deepEqual((await admin.getUsers()).map((u) => u.name), ['app', 'root']);
  assert.deepEqual((await admin.getRoles()).map((r) => r.name), ['reader']);
  assert.deepEqual((await app.roles()).map((r) => r.name), ['reader']);
  const perms = await reader.permissions();
  assert.deepEqual(
    perms.map((p) => [p.permission, p.range.start.toString(), p.range.end.toString()]),
    [['Read', 'app/', 'app0'], ['Readwrite', 'app/own', '']],
  );
  await assert.rejects(admin.user('nobody').roles(), EtcdUserNotFoundError);
  await assert.rejects(app.removeRole('nope'), EtcdRoleNotGrantedError);
  await admin.put('app/config').value('v1');
  await admin.auth.authEnable();

  // The admin client has no credentials: etcd says the user name is empty (etcd3 types it by its code).
  await assert.rejects(admin.get('app/config').string(), (e: Error) => e instanceof GRPCInvalidArgumentError && /etcdserver: user name is empty/.test(e.message));

  const appClient = sim.etcd3({ auth: { username: 'app', password: 'apppw' } });
  assert.equal(await appClient.get('app/config').string(), 'v1');
  assert.deepEqual(await appClient.getAll().prefix('app/').keys(), ['app/config']);
  await appClient.put('app/own').value('mine');
  await assert.rejects(appClient.put('app/config').value('v2').exec(), EtcdPermissionDeniedError);
  await assert.rejects(appClient.get('other').string(), EtcdPermissionDeniedError);
  await assert.rejects(appClient.getUsers(), EtcdPermissionDeniedError);

  const rootClient = sim.etcd3({ auth: { username: 'root', password: 'rootpw' } });
  assert.equal(await rootClient.get('app/own').string(), 'mine');
  await rootClient.delete().key('app/own');

  const wrong = sim.etcd3({ auth: { username: 'app', password: 'nope' } });
  await assert.rejects(wrong.get('app/config').string(), EtcdAuthenticationFailedError);
  for (const c of [admin, appClient, rootClient, wrong]) c.close();
});

test('etcd3: an expired token is renewed by authenticating again, as the real client does; a password change too', async () => {
  const sim = createEtcdSim({
    time: 'virtual',
    authTokenTTL: 300,
    auth: { users: [{ name: 'root', password: 'pw', roles: ['root'] }], enable: true },
  });
  const client = sim.etcd3({ auth: { username: 'root', password: 'pw' } });
  await client.put('k').value('1');
  assert.equal(serverOf(sim).auth.tokens.size, 1);
  sim.server.advance(301_000);
  // The first call fails with "invalid auth token"; the client authenticates again and retries.
  assert.equal(await client.get('k').string(), '1');
  assert.equal(serverOf(sim).auth.tokens.size, 1, 'the expired token is gone, a new one was issued');
  // Another client changes root's password: the old token is dropped and the old password no longer works.
  const other = sim.etcd3({ auth: { username: 'root', password: 'pw' } });
  await other.user('root').setPassword('pw2');
  await assert.rejects(client.get('k').string(), EtcdAuthenticationFailedError);
  client.close();
  other.close();
});

test('etcd3: a watch on an unreadable key fails, a readable one sees events', async () => {
  const sim = createEtcdSim({
    time: 'virtual',
    auth: {
      roles: [{ name: 'r', permissions: [{ permType: 'READ', key: 'ok' }] }],
      users: [
        { name: 'root', password: 'pw', roles: ['root'] },
        { name: 'u', password: 'p', roles: ['r'] },
      ],
      enable: true,
    },
  });
  const root = sim.etcd3({ auth: { username: 'root', password: 'pw' } });
  const u = sim.etcd3({ auth: { username: 'u', password: 'p' } });
  const w = await u.watch().key('ok').create();
  const seen: string[] = [];
  w.on('put', (kv) => seen.push(kv.value.toString()));
  await root.put('ok').value('1');
  await sim.settle();
  assert.deepEqual(seen, ['1']);
  await w.cancel();
  // A refused create: etcd3 resolves nothing and keeps retrying; the raw service shows the refusal.
  const call = sim.services.watch.watch({ token: sim.services.auth.authenticate({ name: 'u', password: 'p' }).token });
  call.write({ create_request: { key: Buffer.from('secret') } });
  assert.equal(call.take()[0]?.cancel_reason, 'rpc error: code = PermissionDenied desc = etcdserver: permission denied');
  call.end();
  root.close();
  u.close();
});
